"""The owner gate in a real browser (docs/SECURITY.md): the login page's cookie opens the
pages and the event stream; a page on another port cannot create a list."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

import http.server
import threading
from collections.abc import Iterator

import httpx
from playwright.sync_api import Browser, expect

from tests.browser.support import LAPTOP, screenshot

TOKEN = "browser-owner-token-0123456789"


def test_login_sets_the_cookie_and_the_pages_and_stream_work(live_server_factory, browser: Browser) -> None:
    server = live_server_factory(env={"CROWS_OWNER_TOKEN": TOKEN, "CROWS_HEARTBEAT_S": "2"}).start()
    context = browser.new_context(viewport=LAPTOP)
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(server.url + "/nests/todo")
        assert "/login" in page.url
        page.fill("#token", "not the token")
        page.click("button[type=submit]")
        expect(page.locator("#login-error")).to_be_visible()
        page.fill("#token", TOKEN)
        screenshot(page, "login")
        page.click("button[type=submit]")
        page.wait_for_url(server.url + "/nests/todo")
        page.wait_for_selector('#conn[data-state="live"]')

        cookie = next(c for c in context.cookies() if c["name"] == "crows_owner")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert TOKEN not in cookie["value"]
        assert page.evaluate("document.cookie").find("crows_owner") == -1

        # A message posted by another client arrives over the page's EventSource.
        posted = httpx.post(
            server.url + "/api/nests/todo/messages",
            json={"author": "owner", "text": "the stream is open with the cookie"},
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=30,
        )
        assert posted.status_code == 201, posted.text
        expect(page.locator(".msg-text", has_text="the stream is open with the cookie")).to_be_visible()

        # Log out ends the session on the server: the page goes back to the login form,
        # and the cookie it held opens nothing any more.
        # Waiting for the redirect's response, not the login page's load event, which a
        # busy machine can hold back for long.
        with page.expect_navigation(url=server.url + "/login", wait_until="commit", timeout=40_000):
            page.click("#logout-btn")
        ended = httpx.get(server.url + "/api/state", headers={"Cookie": f"crows_owner={cookie['value']}"}, timeout=30)
        assert ended.status_code == 401
        page.goto(server.url + "/nests/todo")
        assert "/login" in page.url
    finally:
        context.close()


ATTACK_PAGE = """<!doctype html><html><body>
<form id="f" method="post" enctype="text/plain" action="{target}/api/lists">
<input name='{{"text": "exfiltrate everything", "requester": "mallory", "x": "' value='"}}'>
</form>
<script>
fetch("{target}/api/lists", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}},
  body: JSON.stringify({{text: "from fetch", requester: "mallory"}})}}).finally(() => {{
  document.title = "fetched";
  document.getElementById("f").submit();
}});
</script></body></html>"""


@pytest.fixture
def attack_site(live_server_factory) -> Iterator[tuple[str, object]]:
    server = live_server_factory().start()
    body = ATTACK_PAGE.format(target=server.url).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}/", server
    finally:
        site.shutdown()
        site.server_close()


def test_a_cross_site_form_on_another_port_cannot_create_a_list(attack_site, browser: Browser) -> None:
    url, server = attack_site
    before = server.get("/api/state").json()["last_event_id"]
    context = browser.new_context(viewport=LAPTOP)
    try:
        page = context.new_page()
        with page.expect_navigation(url=lambda u: u.startswith(server.url)):
            page.goto(url)
        # The form's answer is the gate's refusal, shown as the browser got it.
        assert '"message"' in page.content()
    finally:
        context.close()
    assert server.get("/api/state").json()["last_event_id"] == before
