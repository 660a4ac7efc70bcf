"""The other pages, and every page at phone width: nothing wider than the screen, the
flock still on its wire, keyboard focus visible."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import expect

from tests.browser.support import PHONE, screenshot

PAGES = ["/", "/nests/todo", "/nests/dm-pepper", "/crows/Pepper", "/trust"]


def test_every_page_fits_a_phone_screen(flock, open_page) -> None:
    page = open_page(flock.url + "/", viewport=PHONE, reduced_motion=True)
    for path in PAGES:
        if path != "/":
            page.goto(flock.url + path)
            page.wait_for_selector('#conn[data-state="live"]')
        page.wait_for_timeout(300)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} is {overflow}px wider than a phone screen"
        if path == "/":
            expect(page.locator("#wire .perch")).to_have_count(10)
            # Every crow with its name and its epithet, on a phone too.
            expect(page.locator("#wire .perch-epithet:visible")).to_have_count(10)
            screenshot(page, "phone-flock", full_page=False)
        if path == "/nests/todo":
            expect(page.locator("#room-switch")).to_be_visible()
            screenshot(page, "phone-nest", full_page=False)


def test_crow_and_trust_pages(flock, open_page) -> None:
    page = open_page(flock.url + "/crows/Pepper")
    expect(page.locator("#crow-epithet")).to_have_text("the Quick-Beak")
    expect(page.locator("#crow-trust table")).to_be_visible()
    expect(page.locator("#crow-dm")).to_have_attribute("href", "/nests/dm-pepper")
    screenshot(page, "crow-page")

    page.goto(flock.url + "/trust")
    page.wait_for_selector('#conn[data-state="live"]')
    expect(page.locator("#ledger table")).to_be_visible()
    expect(page.locator("#ledger tbody tr")).to_have_count(11)  # the flock and ten crows
    screenshot(page, "trust-ledger")


def test_the_flock_is_keyboard_reachable(flock, open_page) -> None:
    page = open_page(flock.url + "/")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to the new list")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    # From the skip link, Tab walks the crows on the wire, each a link to its page.
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.getAttribute('href')")
    assert focused == "/crows/Quill", focused
