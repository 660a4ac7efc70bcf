"""The owner's desk in a real browser (docs/REVIEW.md): a five-item list reviewed with the
keyboard alone, the title count rising and falling; a rejection with a reason, then a
retry whose note shows in the crews' prompts in the flight log; an auto-approved answer
overruled and the crow shown one level lower; an edited approval that shows the owner's
text in the report and leaves the streak where it was; a Markdown answer with a code
block that renders and copies."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import Page, expect

from tests.browser.support import screenshot
from tests.browser.test_desk_pages import _axe

FIVE = [
    "Draft a launch tweet for the crow café",
    "Find three facts about corvid memory",
    "Plan a Saturday clean-up of the nest",
    "Write a thank-you note to the baker",
    "Suggest a name for the new crow",
]


def post_list(flock, items: list[str]) -> str:
    response = flock.post("/api/lists", {"text": "\n".join(items), "requester": "owner"})
    assert response.status_code == 202, response.text
    return response.json()["list_id"]


def wait_finished(flock, list_id: str, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = flock.get(f"/api/lists/{list_id}").json()
        if state["status"] == "finished":
            return state
        time.sleep(0.3)
    raise AssertionError(f"list {list_id} did not finish: {state}")


def focused_key(page: Page) -> str | None:
    return page.evaluate("document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key || null : null")


def test_a_five_item_list_is_reviewed_with_the_keyboard_alone(flock, open_page) -> None:
    page = open_page(flock.url + "/review")
    expect(page).to_have_title(re.compile(r"^Review"))
    list_id = post_list(flock, FIVE)

    cards = page.locator(".review-card")
    expect(cards).to_have_count(5, timeout=40_000)
    expect(page).to_have_title(re.compile(r"^\(5\) Review"))
    expect(page.locator("#nav-count-n")).to_have_text("5")
    # Each card names the item by its text, with the plan and the countdown.
    expect(cards.first.locator(".review-text")).to_have_text(re.compile("|".join(map(re.escape, FIVE))))
    expect(cards.first.locator(".review-plan")).to_contain_text("The Sentry's plan")
    expect(cards.first.locator(".review-countdown")).to_contain_text("fails safe in")
    screenshot(page, "review-queue")

    page.keyboard.press("?")
    expect(page.locator(".review-keys")).to_be_visible()
    page.keyboard.press("?")
    expect(page.locator(".review-keys")).to_be_hidden()
    page.keyboard.press("?")
    page.keyboard.press("Escape")  # Esc hides them too
    expect(page.locator(".review-keys")).to_be_hidden()

    page.keyboard.press("j")
    approved = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if flock.get(f"/api/lists/{list_id}").json()["status"] == "finished":
            break
        if cards.count() == 0:
            page.wait_for_timeout(200)
            continue
        key = focused_key(page)
        if key is None:
            page.keyboard.press("j")
            continue
        page.keyboard.press("a")
        approved += 1
        # Focus stays in the queue: on the next card, never thrown back to the top of the page.
        page.wait_for_function(
            "k => !document.querySelector(`.review-card[data-key=\"${k}\"]`)", arg=key, timeout=10_000
        )
        remaining = cards.count()
        if remaining:
            page.wait_for_function("document.activeElement && document.activeElement.classList.contains('review-card')",
                                   timeout=10_000)
    state = wait_finished(flock, list_id)
    assert approved >= 10, f"approved {approved} cards by keyboard"
    assert [i["stage"] for i in state["items"]] == ["answered"] * 5
    expect(cards).to_have_count(0)
    expect(page).to_have_title(re.compile(r"^Review"))
    expect(page.locator("#nav-count-n")).to_have_text("0")


def test_a_rejection_with_a_reason_then_a_retry_with_the_note_in_the_flight_log(flock, open_page) -> None:
    list_id = post_list(flock, ["Write a haiku about crows"])
    item_id = f"{list_id}-1"
    page = open_page(flock.url + "/review")
    card = page.locator(".review-card").first
    expect(card).to_be_visible(timeout=40_000)
    card.focus()
    page.keyboard.press("r")
    reason = page.locator(".review-form-reject textarea").first
    expect(reason).to_be_focused()
    reason.fill("Too vague: say which season.")
    page.keyboard.press("Enter")
    expect(page.locator(".review-card")).to_have_count(0)
    wait_finished(flock, list_id)

    page.goto(f"{flock.url}/lists/{list_id}")
    page.wait_for_selector('#conn[data-state="live"]')
    expect(page.locator(".owner-reasons")).to_contain_text("Too vague: say which season.")
    page.fill(".retry-form textarea", "Make it about winter snow.")
    page.click(".retry-btn")
    inline = page.locator("#review-inline .review-card")
    approved = 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and approved < 2:
        button = inline.locator("button.approve").first
        if button.count() and button.is_enabled():
            try:
                button.click(timeout=2_000)
                approved += 1
            except Exception:
                pass
        page.wait_for_timeout(200)
    state = wait_finished(flock, list_id)
    assert state["items"][0]["attempt"] == 2 and state["items"][0]["stage"] == "answered"
    expect(page.locator(".owner-note")).to_contain_text("Make it about winter snow.")
    page.locator(".flight-log summary").first.click()
    expect(page.locator(".flight-log pre.prompt").first).to_be_visible()
    expect(page.locator(".flight-log")).to_contain_text("Make it about winter snow.")
    flights = flock.get(f"/api/flights?item_id={item_id}").json()
    assert any("winter snow" in f["prompt"] for f in flights)
    screenshot(page, "retry-flight-log")
    assert _axe(page) == []


def test_an_auto_approved_answer_is_overruled_and_the_crow_drops_a_level(flock, open_page) -> None:
    seeded = flock.manage("trust_seed", "--holders", "all", "--task-types", "all")
    assert seeded.returncode == 0, seeded.stderr
    list_id = post_list(flock, ["Write a haiku about crows"])
    state = wait_finished(flock, list_id)
    item = state["items"][0]
    crow, task_type = item["crows"][0], item["task_type"]
    page = open_page(f"{flock.url}/lists/{list_id}")
    page.click(".overrule-btn")
    dialog = page.locator("dialog.crows-dialog[open]")
    expect(dialog).to_contain_text(crow)  # it names the crow it demotes
    dialog.locator("textarea").fill("It rhymes; haiku do not.")
    dialog.locator("button[type=submit]").click()
    expect(page.locator(".item-overruled")).to_be_visible()
    expect(page.locator(".owner-reasons")).to_contain_text("It rhymes")
    trust = flock.get("/api/trust").json()
    assert trust["holders"][crow][task_type]["level"] == 1
    page.goto(f"{flock.url}/crows/{crow}")
    page.wait_for_selector('#conn[data-state="live"]')
    expect(page.locator("body")).to_contain_text("regular")
    screenshot(page, "overruled-crow")


def open_the_answers_edit_box(flock, open_page):
    """On /review, with one one-item list posted: approve its triage with `a` (nothing
    chosen yet: `a` approves the top card), then open Edit on its answer; the page and the
    focused edit box."""
    page = open_page(flock.url + "/review")
    expect(page.locator(".review-triage")).to_have_count(1, timeout=40_000)
    page.keyboard.press("a")
    output = page.locator(".review-output")
    expect(output).to_have_count(1, timeout=40_000)
    output.focus()
    page.keyboard.press("e")
    edit = page.locator(".review-form-edit:not([hidden]) textarea")
    expect(edit).to_be_focused()
    return page, edit


def test_an_edited_approval_shows_the_owners_text_and_leaves_the_streak(flock, open_page) -> None:
    list_id = post_list(flock, ["Write a haiku about crows"])
    item_id = f"{list_id}-1"
    page, edit = open_the_answers_edit_box(flock, open_page)
    crows = flock.get(f"/api/lists/{list_id}").json()["items"][0]
    before = flock.get("/api/trust").json()["holders"]
    edit.fill("Black wings at first light\n\nthe **owner's** own haiku")
    page.keyboard.press("Control+Enter")
    state = wait_finished(flock, list_id)
    assert state["items"][0]["edited_text"].startswith("Black wings")
    after = flock.get("/api/trust").json()["holders"]
    for crow in crows["crows"]:
        assert after[crow][crows["task_type"]] == before[crow][crows["task_type"]]
    page.goto(f"{flock.url}/lists/{list_id}")
    page.wait_for_selector('#conn[data-state="live"]')
    expect(page.locator(".edited-answer")).to_contain_text("Black wings at first light")
    expect(page.locator(".edited-answer strong").last).to_have_text("owner's")
    md = flock.get(f"/lists/{list_id}/report.md")
    assert md.status_code == 200 and "Black wings at first light" in md.text
    assert "attachment" in md.headers["content-disposition"]
    screenshot(page, "edited-approval")
    assert _axe(page) == []
    assert item_id in md.text or "Write a haiku" in md.text


CODE_ANSWER = "Here it is:\n\n```python\nfor n in range(1, 16):\n    print(n)\n```\n\nSee [the docs](https://docs.python.org/3/)."


@pytest.fixture
def scripted_flock(live_server_factory, tmp_path: Path):
    rules = [
        {"crow": "Sentry", "task": "triage",
         "reply": json.dumps({"mode": "solo", "task_type": "code", "reason": "One small program."})},
        {"crow": "*", "task": "answer", "reply": CODE_ANSWER},
        {"crow": "*", "task": "synthesise", "reply": CODE_ANSWER},
        {"crow": "*", "task": "merge", "reply": CODE_ANSWER},
    ]
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules))
    return live_server_factory(env={"CROWS_BRAIN": f"script:{path}", "CROWS_HEARTBEAT_S": "2"}).start()


def test_a_markdown_answer_with_a_code_block_renders_and_copies(scripted_flock, open_page) -> None:
    flock = scripted_flock
    list_id = post_list(flock, ["Print the numbers one to fifteen in Python"])
    page = open_page(flock.url + "/review")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=flock.url)
    expect(page.locator(".review-card")).to_have_count(1, timeout=40_000)
    page.locator(".review-card").focus()
    page.keyboard.press("a")
    output = page.locator(".review-output")
    expect(output).to_have_count(1, timeout=40_000)
    expect(output.locator(".answer-md pre code")).to_contain_text("print(n)")
    link = output.locator(".answer-md a")
    expect(link).to_have_attribute("href", "https://docs.python.org/3/")
    expect(link).to_have_attribute("target", "_blank")
    output.locator(".code-tools .copy-btn").click()
    assert "for n in range(1, 16):" in page.evaluate("navigator.clipboard.readText()")
    output.locator(".answer-tools .copy-btn").click()
    assert page.evaluate("navigator.clipboard.readText()") == CODE_ANSWER
    screenshot(page, "markdown-answer")
    assert _axe(page) == []
    output.focus()
    page.keyboard.press("a")
    wait_finished(flock, list_id)
    page.goto(f"{flock.url}/lists/{list_id}")
    page.wait_for_selector('#conn[data-state="live"]')
    expect(page.locator("#report-items .answer-md pre code")).to_contain_text("print(n)")


def test_approve_all_shown_takes_one_confirmation(flock, open_page) -> None:
    page = open_page(flock.url + "/review")
    list_id = post_list(flock, FIVE[:3])
    expect(page.locator(".review-triage")).to_have_count(3, timeout=40_000)
    page.get_by_role("button", name="Approve all shown").click()
    dialog = page.locator("dialog.crows-dialog[open]")
    expect(dialog).to_contain_text("Approve all 3 cards shown?")
    dialog.get_by_role("button", name="Approve 3 cards").click()
    expect(page.locator(".review-triage")).to_have_count(0)
    expect(page.locator("dialog")).to_have_count(0)
    verdicts = [v for i in flock.get(f"/api/lists/{list_id}").json()["items"] for v in i["verdicts"]]
    assert [(v["target"], v["verdict"]) for v in verdicts] == [("triage", "approved")] * 3


def test_a_card_arriving_while_the_owner_types_an_edit_takes_neither_the_focus_nor_a_verdict(flock, open_page) -> None:
    # A new card redraws the queue; the owner's edit box keeps its focus and caret, and the
    # letters typed after it land in the box, never as shortcuts approving other cards.
    first = post_list(flock, ["Write a haiku about crows"])
    page, edit = open_the_answers_edit_box(flock, open_page)
    edit.fill("My own words")
    page.keyboard.press("End")

    second = post_list(flock, ["Plan a Saturday clean-up of the nest"])
    expect(page.locator(".review-card")).to_have_count(2, timeout=40_000)  # its triage card arrived
    expect(edit).to_be_focused()
    page.keyboard.type(" and a few more, again")
    expect(edit).to_have_value("My own words and a few more, again")
    # Nothing was decided by the typing: the answer and the new triage both still wait.
    expect(page.locator(".review-card")).to_have_count(2)
    assert flock.get(f"/api/lists/{first}").json()["status"] == "flying"
    assert flock.get(f"/api/lists/{second}").json()["items"][0]["stage"] == "triage_review"
    page.keyboard.press("Control+Enter")
    state = wait_finished(flock, first)
    assert state["items"][0]["edited_text"] == "My own words and a few more, again"
    expect(page.locator(".review-card")).to_have_count(1)
