"""Every tab live on one connection, and crow state that never goes stale.

The browser allows six connections per host: the tabs share one event stream (a
SharedWorker holds it, static/ui/stream_hub.js), so the tenth tab is as live as the first
and its POSTs are answered. A crow caged in one room and freed by the phrase in its direct
chat is shown free on every open page; the trust table marks it while it is caged."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import LAPTOP, screenshot
from tests.browser.test_governance import until


def test_ten_tabs_share_one_stream_and_the_tenth_is_live_and_answered(flock, browser, console) -> None:
    context = browser.new_context(viewport=LAPTOP)
    try:
        urls = ["/", "/nests/todo", "/trust", "/review", "/nests/dm-pepper"] * 2
        pages = []
        for url in urls:
            page = context.new_page()
            page.on("console", console.on_console)
            page.on("pageerror", lambda exc: console.errors.append(f"uncaught: {exc}"))
            page.goto(flock.url + url)
            pages.append(page)
        for page in pages:
            expect(page.locator('#conn[data-state="live"]')).to_be_visible()
        # One live stream for the whole browser: the pages' backlog reads have ended.
        assert until(lambda: flock.get("/api/state").json()["streams_open"] == 1, timeout=10)

        tenth = pages[-1]
        tenth.fill("#composer-text", "hello from the tenth tab")
        with tenth.expect_response(lambda r: r.url.endswith("/api/nests/dm-pepper/messages") and r.request.method == "POST") as answered:
            tenth.press("#composer-text", "Enter")
        assert answered.value.status == 201
        expect(tenth.locator('.msg[data-author="owner"]').last).to_contain_text("hello from the tenth tab")
        # The same message reaches the other dm-pepper tab through the shared stream.
        expect(pages[4].locator('.msg[data-author="owner"]').last).to_contain_text("hello from the tenth tab")
        screenshot(tenth, "desk-tenth-tab-live")
    finally:
        context.close()
    assert console.unexpected() == [], "the pages logged errors"


def test_a_page_says_loading_until_its_lists_arrive_never_empty_first(flock, open_page) -> None:
    r = flock.post("/api/lists", {"text": "Draft a launch tweet for the crow café", "requester": "owner", "nest_id": "todo"})
    assert r.status_code == 202, r.text
    page = open_page(flock.url + "/")
    expect(page.locator(".list-card")).to_have_count(1)
    # The empty state was never drawn: the page went from "reading" to the list.
    expect(page.locator("#lists-empty")).to_have_count(0)


def test_a_crow_freed_in_its_direct_chat_is_free_on_every_open_page(governed, open_page) -> None:
    r = governed.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
    assert r.status_code == 201, r.text
    assert until(lambda: any(c["name"] == "Rook" and c["status"] == "quarantined" for c in governed.get("/api/crows").json()))

    todo = open_page(governed.url + "/nests/todo")
    other = open_page(governed.url + "/nests/dm-pepper")
    trust = open_page(governed.url + "/trust")
    dm = open_page(governed.url + "/nests/dm-rook")
    expect(other.locator('#dm-rooms a[href="/nests/dm-rook"]')).to_contain_text("caged")
    expect(todo.locator('#chat-members a[href="/crows/Rook"]')).to_contain_text("caged")
    expect(trust.locator('#crow-cards a[href="/crows/Rook"]')).to_contain_text("caged")
    # The composer never suggests a caged crow.
    todo.fill("#composer-text", "@Ro")
    todo.press("#composer-text", "o")
    expect(todo.locator("#mention-list")).to_be_hidden()
    todo.fill("#composer-text", "@Pe")
    todo.press("#composer-text", "p")
    expect(todo.locator("#mention-list")).to_contain_text("Pepper")
    todo.fill("#composer-text", "")

    dm.fill("#composer-text", "yes, reinstate Rook")
    dm.press("#composer-text", "Enter")
    for page in (todo, other, dm):
        expect(page.locator('#dm-rooms a[href="/nests/dm-rook"]')).not_to_contain_text("caged", timeout=2_000)
    expect(todo.locator('#chat-members a[href="/crows/Rook"]')).not_to_contain_text("caged", timeout=2_000)
    expect(trust.locator('#crow-cards a[href="/crows/Rook"]')).not_to_contain_text("caged", timeout=3_000)
    screenshot(todo, "desk-crow-freed-everywhere")


def test_the_trust_table_marks_a_caged_then_a_retired_crow(governed, open_page) -> None:
    page = open_page(governed.url + "/trust")
    r = governed.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
    assert r.status_code == 201, r.text
    rook = page.locator('#ledger tbody th a[href="/crows/Rook"]')
    expect(rook.locator('[data-mark="caged"]')).to_be_visible(timeout=30_000)
    decision = until(lambda: next((d for d in governed.get("/api/state").json()["open_decisions"] if d.get("crow") == "Rook"), None))
    assert decision, "the Sentry opened no decision about Rook"
    r = governed.post(f"/api/decisions/{decision['decision_id']}", {"answer": "retire"})
    assert r.status_code == 200, r.text
    expect(rook.locator('[data-mark="retired"]')).to_be_visible(timeout=3_000)
    screenshot(page, "desk-trust-retired-mark")


def in_view(page, selector: str) -> bool:
    """Whether the element's whole box is inside the window."""
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    assert box is not None and size is not None, f"{selector} is not drawn"
    return box["y"] >= 0 and box["x"] >= 0 and box["y"] + box["height"] <= size["height"] + 0.5 and box["x"] + box["width"] <= size["width"] + 0.5


@pytest.mark.parametrize("size", [{"width": 1366, "height": 768}, {"width": 390, "height": 844}], ids=["laptop", "phone"])
def test_the_conversation_and_composer_stay_in_view_with_cards_waiting(governed, open_page, size) -> None:
    r = governed.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
    assert r.status_code == 201, r.text
    r = governed.post("/api/lists", {"text": "Draft a launch tweet for the crow café\nFind three facts about corvid memory", "requester": "owner", "nest_id": "todo"})
    assert r.status_code == 202, r.text
    for i in range(12):
        governed.post("/api/nests/todo/messages", {"author": "owner", "text": f"note {i}: the conversation goes on"})
    page = open_page(governed.url + "/nests/todo", viewport=size)
    bar = page.locator("#cards-bar")
    expect(bar).to_contain_text("1 decision and 2 waiting cards for you", timeout=30_000)
    expect(bar).to_contain_text("the most urgent fails safe in")
    expect(page.locator('.msg[data-author="owner"]').last).to_contain_text("note 11")
    page.wait_for_timeout(300)  # the list scrolls to its newest message
    assert in_view(page, "#composer-text"), "the composer is off screen"
    assert in_view(page, "#messages > .msg >> nth=-1"), "the newest message is off screen"
    # The bar opens on a key as well as a click, and the conversation keeps its place.
    bar.focus()
    page.keyboard.press("Enter")
    expect(bar).to_have_attribute("aria-expanded", "true")
    expect(page.locator('#decisions .decision[data-crow="Rook"]')).to_be_visible()
    assert in_view(page, "#composer-text"), "the open cards pushed the composer off screen"
    screenshot(page, f"desk-nest-cards-{'phone' if size['width'] < 500 else 'laptop'}", full_page=False)


def finish_lists(server, list_ids: list[str], timeout: float = 120) -> None:
    """Approve whatever waits until every list is finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(server.get(f"/api/lists/{i}").json()["status"] == "finished" for i in list_ids):
            return
        for card in server.get("/api/review").json()["cards"]:
            if card["kind"] != "decision":
                server.post("/api/verdicts", {"item_id": card["item_id"], "target": card["target"], "approve": True})
        time.sleep(0.3)
    raise AssertionError("the lists did not finish")


def test_the_home_page_shows_finished_lists_one_line_each_within_two_screens(flock, open_page) -> None:
    ids = []
    for text in ("Write a haiku about rain", "Draft a tweet for the café", "List three facts about crows",
                 "Write a tagline for the bakery", "Summarize the crow report", "Plan a picnic"):
        r = flock.post("/api/lists", {"text": text, "requester": "owner"})
        assert r.status_code == 202, r.text
        ids.append(r.json()["list_id"])
    finish_lists(flock, ids)
    page = open_page(flock.url + "/", viewport={"width": 1366, "height": 768})
    lines = page.locator("details.list-line")
    expect(lines).to_have_count(6)
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= 2 * 768, f"the home page is {height}px tall with six finished lists"
    # A line opens on a click into the full card, with its report link.
    lines.first.locator("summary").click()
    expect(lines.first.locator(".list-card .item")).to_have_count(1)
    expect(lines.first.locator(".report-link a")).to_be_visible()
    screenshot(page, "desk-home-finished-lines")
