"""A page stays live through a server restart, and an API error reaches the owner in words."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

import httpx
from playwright.sync_api import expect

from tests.browser.support import screenshot

WHILE_DOWN = "Written while the server was down: the crows kept the log."


def test_page_reconnects_after_a_restart_and_shows_what_it_missed(flock, open_page, console) -> None:
    # While the server is down the browser's reconnect attempts are refused, and requests
    # in flight when it stops are cut (the panels' reads the message above set off can be
    # on a kept-alive socket the stop closes: ERR_SOCKET_NOT_CONNECTED); those are the only
    # errors this test expects.
    console.allow(
        r"ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_CONNECTION_RESET|ERR_INCOMPLETE_CHUNKED_ENCODING"
        r"|ERR_SOCKET_NOT_CONNECTED"
    )
    page = open_page(flock.url + "/nests/todo")
    page.fill("#composer-text", "Before the restart.")
    page.keyboard.press("Enter")
    expect(page.locator(".msg", has_text="Before the restart.")).to_be_visible()

    flock.stop()
    expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting", timeout=15_000)
    expect(page.locator("#conn")).to_contain_text("reconnecting")
    screenshot(page, "reconnecting", full_page=False)

    # An event written while the server is down, by another process, straight to the log.
    done = flock.manage(
        "shell", "-c",
        "from nests.actions import post_message; "
        f"post_message('todo', author='owner', text={WHILE_DOWN!r})",
    )
    assert done.returncode == 0, done.stderr

    flock.start()
    expect(page.locator(".msg", has_text=WHILE_DOWN)).to_be_visible(timeout=30_000)
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    # Nothing is shown twice after the replay.
    expect(page.locator(".msg", has_text="Before the restart.")).to_have_count(1)
    expect(page.locator(".msg", has_text=WHILE_DOWN)).to_have_count(1)
    screenshot(page, "reconnected")


def test_a_bad_post_is_shown_to_the_owner_in_words(flock, open_page, console) -> None:
    console.allow(r"status of 400")
    page = open_page(flock.url + "/")

    # An item over the 2,000-character cap: the server says exactly what is wrong.
    page.fill("#list-text", "Fine item\n" + "caw " * 600)
    page.click("#list-send")
    expected = httpx.post(
        flock.url + "/api/lists", json={"text": "Fine item\n" + "caw " * 600, "requester": "owner", "nest_id": "todo"}
    )
    assert expected.status_code == 400
    error = page.locator("#list-error")
    expect(error).to_be_visible()
    expect(error).to_have_text(expected.json()["message"])
    expect(error).to_have_attribute("role", "alert")
    expect(page.locator(".list-card")).to_have_count(0)
    screenshot(page, "error-shown", full_page=False)

    # The same in a nest: a nest with no core crows.
    page.goto(flock.url + "/nests/todo")
    page.wait_for_selector('#conn[data-state="live"]')
    page.click("#new-nest summary")
    page.fill("#nest-name", "Launch copy")
    page.click("#nest-form button[type=submit]")
    expect(page.locator("#nest-error")).to_contain_text("core crows")


def test_the_page_says_reconnecting_as_soon_as_the_network_drops(flock, open_page, console) -> None:
    # Offline, the reconnect attempts fail in the browser; those are the expected errors.
    console.allow(r"ERR_INTERNET_DISCONNECTED|ERR_NETWORK_CHANGED|ERR_CONNECTION_REFUSED")
    page = open_page(flock.url + "/nests/todo")
    page.context.set_offline(True)
    expect(page.locator("#conn")).to_have_attribute("data-state", "reconnecting", timeout=5_000)
    done = flock.post("/api/nests/todo/messages", {"author": "owner", "text": "Sent while you were offline."})
    assert done.status_code == 201
    page.context.set_offline(False)
    expect(page.locator(".msg", has_text="Sent while you were offline.")).to_have_count(1, timeout=15_000)
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")

