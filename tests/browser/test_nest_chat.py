"""The owner asks @Pepper for something in a nest, by keyboard, and watches the claim and
the delivery arrive on the request."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

import re

from playwright.sync_api import expect

from tests.browser.support import screenshot


def test_owner_asks_pepper_and_sees_the_claim_and_the_delivery(flock, open_page) -> None:
    page = open_page(flock.url + "/nests/todo")
    expect(page.locator("#meter-exchanges .meter-value")).not_to_have_text("—")

    composer = page.locator("#composer-text")
    composer.focus()
    composer.type("@Pep")
    options = page.locator("#mention-list [role=option]")
    expect(options).to_have_count(1)
    expect(options.first).to_contain_text("Pepper")
    page.keyboard.press("Enter")
    expect(composer).to_have_value("@Pepper ")
    composer.type("could you write a tiny script that counts the shiny things in the nest?")
    page.keyboard.press("Enter")

    request = page.locator(".msg[data-author=owner]").first
    expect(request).to_contain_text("counts the shiny things")
    expect(request.locator(".to")).to_contain_text("@Pepper")
    # `to` links to the crow, as `refers_to` links to the message.
    expect(request.locator(".to a")).to_have_attribute("href", "/crows/Pepper")

    claim = request.locator(".answer-chip.answer-claim")
    expect(claim).to_contain_text("claimed by Pepper", timeout=30_000)
    delivered = request.locator(".answer-chip.answer-deliver")
    expect(delivered).to_contain_text("delivered by Pepper", timeout=30_000)

    delivery = page.locator(".msg.kind-deliver[data-author=Pepper]").first
    expect(delivery).to_be_visible()
    request_id = request.get_attribute("data-msg-id")
    expect(delivery.locator(".ref")).to_have_text(f"↩ re your request {request_id}")
    expect(page.locator(".msg.kind-claim[data-author=Pepper]")).to_have_count(1)
    # Each message says how its kind was decided, with Jev's probabilities, also for the
    # messages that arrived after the page opened; the budgets show what is left.
    expect(request.locator(".tagged")).to_have_attribute("title", re.compile(r"Jev's probabilities: request \d+%"))
    expect(delivery.locator(".tagged")).to_have_attribute("title", re.compile(r"Jev's probabilities: \w+ \d+%"))
    expect(page.locator("#meter-exchanges .meter-value")).to_contain_text("of")
    expect(page.locator("#meter-tokens .meter-value")).to_contain_text("of")

    # The claim chip links to the claim in the log.
    claim.click()
    expect(page.locator(".msg.kind-claim.highlight")).to_have_count(1)
    screenshot(page, "nest-claim-and-delivery")

    # Opened again, the room replays from its first message, with Jev's probabilities
    # for each kind on the tag's hover.
    page.reload()
    page.wait_for_selector('#conn[data-state="live"]')
    request = page.locator(f".msg[data-msg-id={request_id}]")
    expect(request.locator(".answer-chip")).to_have_count(2)
    expect(request.locator(".tagged")).to_have_attribute("title", re.compile(r"Jev's probabilities: request \d+%"))


def test_a_new_nest_takes_its_core_crows_from_checkboxes_checked_the_usual_way(flock, open_page) -> None:
    page = open_page(flock.url + "/nests/todo")
    page.get_by_text("+ New nest").click()
    page.fill("#nest-name", "Seed Run")
    page.get_by_role("checkbox", name="Hugin").check()
    page.get_by_role("checkbox", name="Inky").check()
    expect(page.get_by_role("checkbox", name="Hugin")).to_be_checked()
    page.get_by_role("button", name="Create nest").click()
    page.wait_for_url(re.compile(r"/nests/seed-run$"))
    page.wait_for_selector('#conn[data-state="live"]')
    expect(page.locator("#chat-members")).to_contain_text("Hugin")
    expect(page.locator("#chat-members")).to_contain_text("Inky")


def test_a_nest_page_keeps_the_waiting_count_in_its_title(flock, open_page) -> None:
    import httpx

    # One triage call waits for the owner (the flock is not trusted on a fresh server).
    posted = httpx.post(flock.url + "/api/lists", json={"text": "research three bird feeders", "requester": "ada"})
    assert posted.status_code == 202
    page = open_page(flock.url + "/nests/todo")
    expect(page).to_have_title(re.compile(r"^\(\d+\) todo · so-many-crows$"), timeout=15_000)



def test_a_crow_boss_hatches_gets_its_direct_chat_without_a_reload(flock, open_page) -> None:
    page = open_page(flock.url + "/nests/todo")
    page.wait_for_selector('#conn[data-state="live"]')
    rooms = page.locator("#dm-rooms")
    expect(rooms).to_contain_text("Quill")
    # The Sentry and the Elder never chat, so they have no direct chat to offer.
    expect(rooms).not_to_contain_text("Sentry")
    expect(rooms).not_to_contain_text("Elder")
    # Near the limit the composer counts.
    count = page.locator("#composer-count")
    expect(count).to_be_hidden()
    page.locator("#composer-text").fill("x" * 1850)
    expect(count).to_have_text("1850 of 2000 characters")
    page.locator("#composer-text").fill("x" * 2010)
    expect(count).to_have_text("2010 of 2000 characters: 10 too many")
    page.locator("#composer-text").fill("@Boss hatch a crow named Wren who is good at data")
    expect(count).to_be_hidden()
    page.locator("#composer-send").click()
    expect(page.locator(".msg[data-author=Boss]").first).to_contain_text("Wren", timeout=30_000)
    expect(rooms.locator("a[href='/nests/dm-wren']")).to_be_visible()
