"""Settings from the page (a crow's model changed, Test connection against a local fake
provider: success, then the provider's error), never missing a waiting approval (title
and nav count, a notification when the tab is hidden, the fail-safe warning), and axe-core
on every page with no serious or critical violation (docs/REVIEW.md)."""

from __future__ import annotations

import re
import time

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import Page, expect

from tests.browser.support import screenshot
from tests.fakes.providers import FakeOpenAI


@pytest.fixture
def fake_openai():
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture
def open_plain(open_page):
    """A page with no stream of its own (settings, the archive, the glossary): opened when
    its first read of the waiting count is in."""
    return lambda url: open_page(url, viewport={"width": 1280, "height": 900}, wait="idle")


def test_settings_change_a_crows_model_and_test_the_connection(live_server_factory, fake_openai, open_plain, console) -> None:
    console.allow(r"status of 400 .*api/crows/Pepper")  # the bad model below, refused on purpose
    console.allow(r"status of 400 .*api/brains/test")  # the script outside CROWS_SCRIPT_DIR below, tested on purpose
    flock = live_server_factory(env={
        "CROWS_BRAIN": "mock", "CROWS_HEARTBEAT_S": "2",
        "CROWS_OPENAI_BASE_URL": fake_openai.base_url, "CROWS_OPENAI_API_KEY": fake_openai.api_key,
        "CROWS_BRAIN_RETRIES": "0",
    }).start()
    page = open_plain(flock.url + "/settings")
    expect(page.locator("#default-brain")).to_have_text("mock")
    expect(page.locator(".mock-note")).to_contain_text("offline mock brain")
    row = page.locator('tr[data-crow="Pepper"]')
    expect(row).to_be_visible()
    row.get_by_label("Model for Pepper").fill("openai:gpt-test")
    row.get_by_role("button", name="Save").click()
    expect(page.locator(".toast")).to_contain_text("Pepper now thinks with openai:gpt-test")
    assert [c["model"] for c in flock.get("/api/crows").json() if c["name"] == "Pepper"] == ["openai:gpt-test"]

    row.get_by_role("button", name="Test connection for Pepper").click()
    result = row.locator(".test-result")
    expect(result).to_contain_text(re.compile(r"Connected: openai:gpt-test answered in \d+ ms"))
    screenshot(page, "settings-connected")

    fake_openai.behaviour = "unauthorized"
    row.get_by_role("button", name="Test connection for Pepper").click()
    expect(result).to_contain_text("Failed:")
    expect(result).to_contain_text("openai")
    expect(result).to_have_class(re.compile("bad"))
    # The provider's long sentence wraps in its cell: the page never grows sideways.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls sideways"
    screenshot(page, "settings-connection-error")

    # A bad model is refused in the server's words; the default brain tests as the mock.
    row.get_by_label("Model for Pepper").fill("gpt 4")
    row.get_by_role("button", name="Save").click()
    expect(row.locator(".form-error")).to_contain_text("model must be")
    # Test connection tests what the box says, saved or not, and typing clears old errors.
    row.get_by_label("Model for Pepper").fill("script:/no/such/rules.json")
    expect(row.locator(".form-error")).to_be_hidden()
    row.get_by_role("button", name="Test connection for Pepper").click()
    expect(result).to_contain_text("Failed (not saved yet)")
    expect(result).to_contain_text("CROWS_SCRIPT_DIR")
    page.click("#test-default")
    expect(page.locator("#test-default-result")).to_have_text("offline mock: no model called.")


def test_the_title_count_rises_and_falls_and_a_hidden_tab_is_notified(flock, open_page) -> None:
    page = open_page(flock.url + "/")
    page.context.grant_permissions(["notifications"], origin=flock.url)
    expect(page).to_have_title(re.compile(r"^The flock"))
    # Permission is asked for on a click, never on load.
    button = page.locator("#notify-btn")
    page.evaluate("""() => {
      window.__notes = [];
      const Real = window.Notification;
      class Spy { constructor(title, opts) { window.__notes.push({ title, body: opts && opts.body }); }
        static get permission() { return Real.permission; }
        static requestPermission() { return Real.requestPermission(); } }
      window.Notification = Spy;
      Object.defineProperty(document, "hidden", { configurable: true, get: () => true });
    }""")
    if button.is_visible():
        button.click()
    expect(button).to_be_hidden()
    flock.post("/api/lists", {"text": "Write a haiku about crows\nName a crow", "requester": "owner"})
    expect(page).to_have_title(re.compile(r"^\(2\) The flock"), timeout=40_000)
    expect(page.locator("#nav-count-n")).to_have_text("2")
    page.wait_for_function("window.__notes.length > 0", timeout=20_000)
    assert "waiting" in page.evaluate("window.__notes[0].title")
    for _ in range(60):
        waiting = flock.get("/api/review").json()["cards"]
        if not waiting:
            break
        for card in waiting:
            flock.post("/api/verdicts", {"item_id": card["item_id"], "target": card["target"], "approve": True})
        time.sleep(0.5)
    expect(page).to_have_title(re.compile(r"^The flock"), timeout=30_000)
    expect(page.locator("#nav-count-n")).to_have_text("0")


def test_a_warning_shows_within_a_minute_of_the_fail_safe(live_server_factory, open_page) -> None:
    flock = live_server_factory(env={"CROWS_BRAIN": "mock", "CROWS_HEARTBEAT_S": "2",
                                     "CROWS_APPROVAL_TIMEOUT_S": "63"}).start()
    page = open_page(flock.url + "/trust")
    flock.post("/api/lists", {"text": "Write a haiku about crows", "requester": "owner"})
    warning = page.locator("#failsafe-warning")
    expect(warning).to_be_visible(timeout=40_000)
    expect(warning).to_contain_text("fail safe within a minute")
    expect(warning).to_contain_text("Write a haiku about crows")
    screenshot(page, "failsafe-warning", full_page=False)


def _axe(page: Page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options={"resultTypes": ["violations"],
                                       "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}})
    bad = [v for v in results.response["violations"] if v.get("impact") in ("serious", "critical")]
    return [f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:4]}" for v in bad]


def test_axe_finds_no_serious_or_critical_violation_on_any_page(flock, open_page, open_plain) -> None:
    list_id = flock.post("/api/lists", {"text": "Write a haiku about crows\nName a crow", "requester": "owner"}).json()["list_id"]
    # Every kind of card and report line on the pages: an answer waiting (rendered, with
    # the mock badge), a triage call waiting, a rejection with its reason and a retry form.
    flock.post("/api/lists", {"text": "Name a crow", "requester": "owner"})
    deadline = time.monotonic() + 60
    first = f"{list_id}-1"
    while time.monotonic() < deadline:
        cards = {(c["item_id"], c["target"]) for c in flock.get("/api/review").json()["cards"]}
        if (first, "triage") in cards:
            flock.post("/api/verdicts", {"item_id": first, "target": "triage", "approve": True})
        if (f"{list_id}-2", "triage") in cards:
            flock.post("/api/verdicts", {"item_id": f"{list_id}-2", "target": "triage", "approve": False,
                                         "reason": "Not now."})
        if (first, "output") in cards and len(cards) >= 2:
            break
        time.sleep(0.3)
    pages = ["/", "/review", f"/lists/{list_id}", "/lists", "/nests/todo", "/crows/Pepper", "/trust",
             "/settings", "/glossary"]
    found: dict[str, list[str]] = {}
    for path in pages:
        page = open_plain(flock.url + path) if path in ("/lists", "/glossary", "/settings") else open_page(flock.url + path)
        page.wait_for_timeout(800)
        bad = _axe(page)
        if bad:
            found[path] = bad
        if path == "/review":
            expect(page.locator(".review-output .mock-badge")).to_have_text("offline mock brain: placeholder answer")
    assert found == {}, found


def test_the_new_pages_fit_a_phone_screen(flock, browser) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, reduced_motion="reduce")
    try:
        page = context.new_page()
        flock.post("/api/lists", {"text": "Write a haiku about crows", "requester": "owner"})
        for path in ("/review", "/settings", "/lists", "/glossary"):
            page.goto(flock.url + path)
            # A page with a stream never goes network-idle: the shared stream is always open.
            if page.locator("#conn").count():
                page.wait_for_selector('#conn[data-state="live"]')
            else:
                page.wait_for_load_state("networkidle")
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{path} is {overflow}px wider than a phone screen"
    finally:
        context.close()


def test_the_trust_pages_output_approval_rate_leaves_the_triage_verdicts_out(flock, open_page) -> None:
    # The triage row's rate judges the Sentry's plans; the chart is the outputs'.
    page = open_page(flock.url + "/trust")
    models = page.evaluate("""async () => {
      const { readFlightModels } = await import("/static/ui/trustdata.js");
      return readFlightModels({ by_model_and_task_type: [
        { provider: "mock", model: "mock", task_type: "triage", calls: 3, owner_verdicts: 3, approval_rate: 1.0 },
        { provider: "mock", model: "mock", task_type: "writing", calls: 2, owner_verdicts: 1, approval_rate: 0.0 },
      ] });
    }""")
    assert [(m["model"], m["approval"], m["verdicts"], m["calls"]) for m in models] == [("mock:mock", 0, 1, 5)]
