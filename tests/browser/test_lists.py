"""A newcomer's first list, from the flock page: post three items, approve each triage
call and each answer with the page's own buttons, and read the answers."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

import time

from playwright.sync_api import Page, expect

from tests.browser.support import screenshot

ITEMS = [
    "Draft a launch tweet for the crow café",
    "Find three facts about corvid memory",
    "Plan a Saturday clean-up of the nest",
]


def approve_everything(page: Page, card, *, timeout: float = 90) -> int:
    """Click Approve on whatever waits in the card until the list finishes."""
    clicked = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if card.locator(".list-status.is-finished").count():
            return clicked
        button = card.locator("button.approve:not([disabled])").first
        if button.count():
            try:
                button.click(timeout=2_000)
                clicked += 1
            except Exception:
                # The card redrew under the click (a new event arrived); look again.
                pass
        page.wait_for_timeout(150)
    raise AssertionError(f"the list did not finish; the card says: {card.inner_text()[:2000]}")


def test_newcomer_posts_a_list_approves_and_reads_the_answers(flock, open_page, console) -> None:
    page = open_page(flock.url + "/")
    expect(page.locator("#wire .perch")).to_have_count(10)
    expect(page.locator("#lists-empty")).to_be_visible()

    page.fill("#list-text", "\n".join(f"- {item}" for item in ITEMS))
    page.click("#list-send")

    card = page.locator(".list-card").first
    expect(card.locator(".item")).to_have_count(3)
    for i, text in enumerate(ITEMS):
        expect(card.locator(".item-text").nth(i)).to_have_text(text)

    # A fresh flock trusts nobody: every triage call and every answer waits for the owner,
    # with the fail-safe countdown beside the buttons.
    expect(card.locator(".approval-triage").first).to_be_visible(timeout=30_000)
    expect(card.locator(".approval .countdown").first).to_contain_text("fails safe in")
    expect(page.locator("#awaiting")).to_be_visible()
    screenshot(page, "flock-triage-approval")

    clicked = approve_everything(page, card)
    assert clicked >= 6, f"expected triage and output approvals for three items, clicked {clicked}"

    expect(card.locator(".list-status")).to_have_text("finished")
    expect(card.locator(".item.item-done")).to_have_count(3)
    answers = card.locator(".answer")
    expect(answers).to_have_count(3)
    for i in range(3):
        assert len(answers.nth(i).inner_text().strip()) > 20
    expect(card.locator(".answer-by").first).to_contain_text("by ")
    expect(card.locator(".budget-value").first).to_contain_text("tokens")
    expect(card.locator(".crew-chip").first).to_be_visible()
    expect(page.locator("#awaiting")).to_be_hidden()
    screenshot(page, "flock-list-finished")

    # The finished list reads as a report on its own page.
    card.locator(".report-link a").click()
    expect(page.locator("#report-items .item")).to_have_count(3)
    expect(page.locator("#report-items .answer")).to_have_count(3)
    expect(page.locator("#report-meta")).to_contain_text("finished")
    page.wait_for_selector('#conn[data-state="live"]')
    screenshot(page, "list-report")


def test_approving_with_the_keyboard_on_the_flock_page_keeps_the_focus_on_the_next_approval(flock, open_page) -> None:
    import httpx

    posted = httpx.post(flock.url + "/api/lists", json={
        "text": "research feeders\nresearch perches\nresearch baths", "requester": "ada",
    })
    assert posted.status_code == 202
    list_id = posted.json()["list_id"]
    page = open_page(flock.url + "/")
    approvals = page.locator(f"#list-{list_id} button.approve")
    expect(approvals).to_have_count(3, timeout=30_000)
    page.locator(f'#list-{list_id} [data-focus-key="approve:{list_id}-1:triage"]').focus()
    page.keyboard.press("Enter")
    # The answered approval goes; the focus goes to the one now in its place, not to the page's top.
    expect(page.locator(f'#list-{list_id} [data-focus-key="approve:{list_id}-1:triage"]')).to_have_count(0, timeout=15_000)
    focused = page.evaluate("document.activeElement && document.activeElement.dataset.focusKey")
    assert focused == f"approve:{list_id}-2:triage"


def test_a_rejection_on_the_flock_page_carries_the_reason_typed_beside_it(flock, open_page) -> None:
    import httpx

    posted = httpx.post(flock.url + "/api/lists", json={"text": "research feeders", "requester": "ada"})
    assert posted.status_code == 202
    list_id = posted.json()["list_id"]
    page = open_page(flock.url + "/")
    box = page.locator(f"#list-{list_id} .approval-triage")
    expect(box).to_have_count(1, timeout=30_000)
    box.locator(".reason-input").fill("Feeders are next month's job.")
    box.locator("button.reject").click()
    expect(page.locator(f"#list-{list_id} .approval-triage")).to_have_count(0, timeout=15_000)
    verdicts = httpx.get(f"{flock.url}/api/lists/{list_id}").json()["items"][0]["verdicts"]
    assert verdicts, verdicts
    assert "Feeders are next month's job." in str(verdicts)


def test_typing_a_reason_on_the_flock_page_survives_another_items_verdict(flock, open_page) -> None:
    # Another item's verdict redraws the list: the reason box keeps its focus and its caret,
    # so the words typed next follow the ones already there.
    import httpx

    posted = httpx.post(flock.url + "/api/lists", json={"text": "research feeders\nwash the bowls", "requester": "ada"})
    assert posted.status_code == 202
    list_id = posted.json()["list_id"]
    page = open_page(flock.url + "/")
    expect(page.locator(f"#list-{list_id} .approval-triage")).to_have_count(2, timeout=30_000)
    reason = page.locator(f'#list-{list_id} [data-focus-key="reason:{list_id}-1:triage"]')
    reason.click()
    page.keyboard.type("Feeders are")
    verdict = httpx.post(f"{flock.url}/api/verdicts", json={"item_id": f"{list_id}-2", "target": "triage", "approve": True})
    assert verdict.status_code == 204
    expect(page.locator(f"#list-{list_id} .approval-triage")).to_have_count(1, timeout=15_000)
    page.keyboard.type(" next month's job.")
    expect(page.locator(f'#list-{list_id} [data-focus-key="reason:{list_id}-1:triage"]')).to_have_value(
        "Feeders are next month's job.")
