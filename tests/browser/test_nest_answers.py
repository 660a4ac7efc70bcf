"""A crow's answer in a nest, read as the owner reads a list's answer (docs/REVIEW.md):
written by the offline mock brain, it carries the "offline mock brain: placeholder answer"
badge on the nest page and on its review card; a delivery has the answers' Copy button;
message ids are details shown on hover or keyboard focus, not on every bubble; and axe
finds no serious or critical violation on the room, a crow's page with flights or
/api/docs."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import screenshot
from tests.browser.test_desk_pages import _axe

BADGE = "offline mock brain: placeholder answer"


def ask_soot(flock) -> str:
    """The owner asks Soot for a poem over the API, as the audit did; the request's msg_id."""
    response = flock.post("/api/nests/todo/messages",
                          {"author": "owner", "text": "@Soot please write a two-line poem about fog", "to": "Soot"})
    assert response.status_code == 201, response.text
    return response.json()["msg_id"]


def wait_delivery_card(flock, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cards = [c for c in flock.get("/api/review").json()["cards"] if c["kind"] == "delivery"]
        if cards:
            return cards[0]
        time.sleep(0.3)
    raise AssertionError("Soot's delivery never waited for the owner")


def test_a_mock_delivery_is_badged_and_copies_on_the_nest_page_and_its_review_card(flock, open_page) -> None:
    page = open_page(flock.url + "/nests/todo")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=flock.url)
    request_id = ask_soot(flock)

    # Live: the claim and the delivery arrive badged; only the delivery is an answer to copy.
    delivery = page.locator(".msg.kind-deliver[data-author=Soot]")
    expect(delivery).to_have_count(1, timeout=40_000)
    expect(delivery.locator(".mock-badge")).to_have_text(BADGE)
    expect(page.locator(".msg.kind-claim[data-author=Soot] .mock-badge")).to_have_text(BADGE)
    expect(page.locator(f".msg[data-msg-id={request_id}] .mock-badge")).to_have_count(0)
    # A delivery is an answer: shown as its rendered Markdown, live and on a reload alike.
    expect(delivery.locator(".msg-text.msg-md .answer-md p").first).to_be_visible()
    copy = delivery.get_by_role("button", name="Copy Soot's answer")
    expect(copy).to_have_count(1)
    copy.click()
    text = flock.get("/api/nests/todo").json()["messages"]
    delivered = next(m for m in text if m["kind"] == "deliver" and m["author"] == "Soot")
    assert page.evaluate("navigator.clipboard.readText()") == delivered["text"]

    # The review card of the same answer says so too, in the API and on /review.
    card = wait_delivery_card(flock)
    assert card["key"] == f"approval:{delivered['msg_id']}:output" and card["mock"] is True
    review = open_page(flock.url + "/review")
    expect(review.locator(".review-card[data-kind=delivery] .mock-badge")).to_have_text(BADGE)
    expect(review.locator(".review-card[data-kind=delivery] .answer-tools .copy-btn")).to_have_count(1)

    # Opened again, the room replays with the server's word on which messages the mock wrote.
    page.reload()
    page.wait_for_selector('#conn[data-state="live"]')
    delivery = page.locator(f".msg[data-msg-id={delivered['msg_id']}]")
    expect(delivery.locator(".mock-badge")).to_have_text(BADGE)
    expect(delivery.locator(".answer-tools .copy-btn")).to_have_count(1)
    expect(delivery.locator(".msg-text.msg-md .answer-md p").first).to_be_visible()
    screenshot(page, "nest-mock-delivery")


def test_message_ids_and_jev_details_show_on_hover_or_focus_not_on_every_bubble(flock, open_page) -> None:
    page = open_page(flock.url + "/nests/todo")
    request_id = ask_soot(flock)
    delivery = page.locator(".msg.kind-deliver[data-author=Soot]")
    expect(delivery).to_have_count(1, timeout=40_000)
    # Its rendered Markdown replaces the plain text once read, and its review card opens
    # above the room (the room moves down): hover the bubble after both.
    expect(delivery.locator(".msg-md")).to_have_count(1)
    expect(page.locator("#review-inline .review-card")).to_have_count(1)
    page.mouse.move(0, 0)
    page.locator("#composer-text").focus()

    def opacity(locator) -> str:
        return locator.evaluate("el => getComputedStyle(el).opacity")

    # The reply says what it answers in words; the id behind it is a detail.
    ref = delivery.locator(".ref")
    expect(ref).to_contain_text("re your request")
    expect(ref).to_have_attribute("title", f"Jump to {request_id}")
    for detail in (ref.locator(".ref-id"), delivery.locator(".msg-id"), delivery.locator(".tagged")):
        expect(detail).to_have_count(1)
        assert opacity(detail) == "0"
    # Nothing is lost: the id shows on hover, and on keyboard focus of the link.
    delivery.locator(".msg-text").hover()
    page.wait_for_timeout(300)
    assert opacity(ref.locator(".ref-id")) == "1" and opacity(delivery.locator(".msg-id")) == "1"
    page.mouse.move(0, 0)
    page.locator("#composer-text").focus()
    ref.focus()
    page.wait_for_timeout(300)
    assert opacity(ref.locator(".ref-id")) == "1" and opacity(delivery.locator(".tagged")) == "1"
    expect(ref.locator(".ref-id")).to_have_text(request_id)
    ref.press("Enter")
    expect(page.locator(f".msg[data-msg-id={request_id}].highlight")).to_have_count(1)


def test_axe_on_a_room_with_a_claim_and_a_delivery_a_crow_with_flights_and_the_api_docs(flock, open_page, browser) -> None:
    ask_soot(flock)
    wait_delivery_card(flock)
    found: dict[str, list[str]] = {}
    for path in ("/nests/todo", "/nests", "/crows/Soot"):
        page = open_page(flock.url + path)
        if path.startswith("/nests"):
            expect(page.locator(".msg-answers .answer-chip")).to_have_count(2)
        else:
            expect(page.locator("#crow-flights .ok-dot").first).to_be_visible()
        page.wait_for_timeout(800)
        found[path] = _axe(page)
    # Swagger UI (ninja's page, from local assets) has no event stream to wait for.
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(flock.url + "/api/docs")
        expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
        assert page.locator("html").get_attribute("lang") == "en"
        found["/api/docs"] = _axe(page)
    finally:
        context.close()
    assert {path: bad for path, bad in found.items() if bad} == {}
