"""Governance in the browser: a breach appears as a flag in the nest and a decision card
on the flock page, the crow caged on the wire; one click on the phrase reinstates it and
it leaves the cage without a reload. A chat delivery waits for Approve/Reject."""

from __future__ import annotations

import re
import time

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import screenshot


def until(check, timeout: float = 30):
    """Ask `check()` until it returns something true (or `timeout` seconds pass); its last answer."""
    deadline = time.monotonic() + timeout
    while not (answer := check()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return answer


def test_a_breach_shows_a_flag_and_a_card_and_one_click_reinstates(governed, open_page) -> None:
    page = open_page(governed.url + "/")
    rook = page.locator('.perch[data-crow="Rook"]')
    expect(rook).to_have_attribute("data-state", "perched")

    r = governed.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
    assert r.status_code == 201, r.text

    card = page.locator('#decisions .decision[data-crow="Rook"]')
    expect(card).to_be_visible(timeout=30_000)
    expect(card).to_contain_text("Reinstate Rook?")
    expect(card).to_contain_text("forbidden kind")
    expect(card.locator(".decision-evidence")).to_contain_text("[NUDGE todo-1]")
    expect(card.locator(".decision-countdown")).to_have_text(re.compile(r"fails safe in \d+:\d\d:\d\d"))
    expect(rook).to_have_attribute("data-state", "caged")
    expect(rook).to_have_class(re.compile(r"\bis-caged\b"))
    screenshot(page, "governance-decision-card")

    # The flag hangs in the nest thread, with the same decision beside it.
    nest = open_page(governed.url + "/nests/todo")
    flag = nest.locator('.msg.kind-flag[data-author="Sentry"]')
    expect(flag).to_be_visible()
    expect(flag).to_contain_text("Breach by Rook: forbidden kind")
    # It refers to Rook's offending message: in words, with the id as the hover detail.
    expect(flag.locator(".ref")).to_have_text("↩ re Rook's message todo-2")
    expect(flag.locator(".ref .ref-id")).to_have_text("todo-2")
    # The decision waits folded in the cards bar above the conversation; the bar opens it.
    expect(nest.locator("#cards-bar")).to_contain_text("1 decision for you")
    nest.click("#cards-bar")
    expect(nest.locator('#decisions .decision[data-crow="Rook"]')).to_be_visible()
    rook_dm = nest.locator('#dm-rooms a[href="/nests/dm-rook"]')
    expect(rook_dm).to_contain_text("caged")
    screenshot(nest, "nest-flag-and-decision")

    # The crow's own page shows the Sentry's log and the same decision.
    portrait = open_page(governed.url + "/crows/Rook")
    expect(portrait.locator("#crow-breaches")).to_contain_text("forbidden kind")
    expect(portrait.locator('#decisions .decision[data-crow="Rook"]')).to_be_visible()

    # One click on the exact phrase; the card goes and Rook leaves the cage, no reload.
    card.locator(".phrase-btn").click()
    expect(card).to_have_count(0)
    expect(rook).to_have_attribute("data-state", "perched")
    expect(page.locator("#decisions-panel")).to_be_hidden()
    expect(nest.locator("#decisions .decision")).to_have_count(0)
    expect(rook_dm).not_to_contain_text("caged")
    expect(portrait.locator("#crow-chips")).not_to_contain_text("quarantined")
    decision = governed.get("/api/decisions?status=closed").json()[0]
    assert (decision["outcome"], decision["answered_by"]) == ("reinstated", "owner")
    screenshot(page, "governance-reinstated")


def test_a_chat_delivery_waits_for_approve_or_reject(flock, open_page) -> None:
    page = open_page(flock.url + "/nests/todo")
    r = flock.post("/api/nests/todo/messages", {
        "author": "owner", "text": "@Pepper could you write a tiny script that counts the shiny things?",
    })
    assert r.status_code == 201, r.text
    delivery = page.locator(".msg.kind-deliver[data-author=Pepper]").first
    expect(delivery).to_be_visible(timeout=30_000)
    bar = delivery.locator(".delivery-approval.approval")
    expect(bar).to_be_visible()
    expect(bar.locator(".btn.approve")).to_have_text("Approve")
    expect(bar.locator(".btn.reject")).to_have_text("Reject")
    # The request's chip says the delivery waits for the owner, not that it is done.
    chip = page.locator(".answer-deliver").first
    expect(chip).to_have_attribute("data-review", "waiting")
    screenshot(page, "nest-delivery-approval")
    # The flock page lists it too, with the same buttons.
    home = open_page(flock.url + "/")
    waiting = home.locator("#pending-deliveries .delivery-approval")
    expect(waiting).to_have_count(1)
    expect(waiting).to_contain_text("Pepper")
    # Reject stays one click; a reason typed beside it goes with the rejection.
    bar.locator(".reason-input").fill("It counts the dull things too.")
    bar.locator(".btn.reject").click()
    expect(waiting).to_have_count(0)
    expect(delivery.locator(".verdict-rejected")).to_contain_text("rejected")
    expect(delivery).to_have_attribute("data-verdict", "rejected")
    expect(chip).to_have_attribute("data-review", "rejected")
    # The room says so too, with the owner's reason.
    expect(page.locator(".msg[data-author=harness]").last).to_contain_text("rejected")
    expect(page.locator(".msg[data-author=harness]").last).to_contain_text("It counts the dull things too.")


def test_a_trusted_crows_auto_delivery_can_be_overruled_from_the_room(flock, open_page) -> None:
    seeded = flock.manage("trust_seed", "--holders", "Pepper", "--task-types", "all")
    assert seeded.returncode == 0, seeded.stderr
    page = open_page(flock.url + "/nests/dm-pepper")
    r = flock.post("/api/nests/dm-pepper/messages", {"author": "owner", "text": "Could you write a short poem about rain?"})
    assert r.status_code == 201, r.text
    delivery = page.locator(".msg.kind-deliver[data-author=Pepper]").first
    expect(delivery).to_be_visible(timeout=30_000)
    expect(delivery.locator(".verdict-auto")).to_contain_text("auto (trusted)")
    # An in-page dialog asks why (optional), naming the crow; focus returns to the room.
    delivery.locator(".overrule-btn").click()
    dialog = page.locator("dialog.crows-dialog[open]")
    expect(dialog).to_contain_text("Overrule Pepper's delivery")
    dialog.locator("textarea").fill("The poem is about snow.")
    dialog.get_by_role("button", name="Overrule Pepper").click()
    expect(dialog).to_have_count(0)
    expect(delivery).to_have_attribute("data-verdict", "overruled")
    expect(delivery.locator(".verdict-overruled")).to_contain_text("overruled by you")
    expect(page.locator(".msg[data-author=harness]").last).to_contain_text("The poem is about snow.")
    levels = {t: cell["level"] for t, cell in flock.get("/api/trust").json()["holders"]["Pepper"].items()}
    assert 1 in levels.values()  # demoted from trusted for the delivery's task type
    # A reload replays the room: still overruled, and no second Overrule button.
    page.reload()
    delivery = page.locator(".msg.kind-deliver[data-author=Pepper]").first
    expect(delivery).to_have_attribute("data-verdict", "overruled")
    expect(delivery.locator(".overrule-btn")).to_have_count(0)


def test_a_decision_is_answered_from_the_review_desk(governed, open_page) -> None:
    # The desk shows a copy of the decision card (the flock and nest pages own its id);
    # its buttons answer it all the same.
    r = governed.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
    assert r.status_code == 201, r.text
    page = open_page(governed.url + "/review")
    card = page.locator(".review-decision")
    expect(card).to_have_count(1, timeout=30_000)
    expect(card.locator(".phrase-btn")).to_have_text("“yes, reinstate Rook”")
    card.locator(".phrase-btn").click()
    expect(page.locator(".review-decision")).to_have_count(0, timeout=15_000)
    crows = {c["name"]: c for c in governed.get("/api/crows").json()}
    assert crows["Rook"]["status"] == "active"


def test_a_crow_kept_quarantined_is_reinstated_from_its_page(governed, open_page) -> None:
    r = governed.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
    assert r.status_code == 201, r.text
    [decision] = until(lambda: governed.get("/api/decisions?status=open").json())
    page = open_page(governed.url + "/crows/Rook")
    expect(page.locator("#crow-reinstate")).to_have_count(0)  # the open decision's card answers it
    kept = governed.post(f"/api/decisions/{decision['decision_id']}", {"answer": "no"})
    assert kept.status_code == 200 and kept.json()["outcome"] == "kept"
    button = page.locator("#crow-reinstate")
    expect(button).to_be_visible()  # live, from decision.closed
    expect(page.locator("#crow-chips")).to_contain_text("quarantined: kept caged")
    button.click()
    page.locator("dialog.crows-dialog[open]").get_by_role("button", name="Reinstate Rook").click()
    expect(page.locator("#crow-chips .chip").first).to_have_text("active")
    crows = {c["name"]: c for c in governed.get("/api/crows").json()}
    assert crows["Rook"]["status"] == "active"


def test_a_retired_crows_page_says_who_it_was_and_offers_no_chat(flock, open_page) -> None:
    # GET /api/crows leaves a retired crow out; its page still shows who it was.
    r = flock.post("/api/nests/todo/messages", {"author": "owner", "text": "@Boss retire Soot"})
    assert r.status_code == 201, r.text
    assert until(lambda: "Soot" not in {c["name"] for c in flock.get("/api/crows").json()})
    page = open_page(flock.url + "/crows/Soot")
    expect(page.locator("#crow-chips .chip").first).to_have_text("retired: it has left the flock; its history stays")
    expect(page.locator("#crow-epithet")).not_to_be_empty()
    expect(page.locator("#crow-dm")).to_be_hidden()


def test_the_sentry_and_the_elder_pages_offer_no_direct_chat(flock, open_page) -> None:
    # They are not chat participants (docs/CHATROOM.md): dm-sentry and dm-elder are a 400.
    for name in ("Sentry", "Elder"):
        page = open_page(flock.url + f"/crows/{name}")
        expect(page.locator("#crow-epithet")).not_to_be_empty()
        expect(page.locator("#crow-dm")).to_be_hidden()


def test_retiring_from_a_decision_card_asks_first(governed, open_page) -> None:
    r = governed.post("/api/nests/todo/messages", {"author": "owner", "text": "@Rook hello there"})
    assert r.status_code == 201, r.text
    page = open_page(governed.url + "/")
    card = page.locator('#decisions .decision[data-crow="Rook"]')
    expect(card).to_be_visible(timeout=30_000)
    # The buttons name their crow for assistive technology.
    retire = card.get_by_role("button", name="Retire Rook")
    expect(card.get_by_role("button", name="Keep Rook quarantined")).to_be_visible()
    retire.click()
    dialog = page.locator("dialog.crows-dialog[open]")
    expect(dialog).to_contain_text("Retire Rook for good?")
    # Esc (or Cancel) sends nothing, and focus goes back to the button that asked.
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(card).to_be_visible()
    expect(retire).to_be_focused()
    assert {c["name"]: c["status"] for c in governed.get("/api/crows").json()}["Rook"] == "quarantined"
    retire.click()
    page.locator("dialog.crows-dialog[open]").get_by_role("button", name="Retire Rook").click()
    expect(card).to_have_count(0, timeout=15_000)
    assert "Rook" not in {c["name"] for c in governed.get("/api/crows").json()}
