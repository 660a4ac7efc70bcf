"""The Content-Security-Policy in a real browser (docs/SECURITY.md): every page answers
with it, and the pages' own scripts, styles and requests satisfy it, so the browser
reports no violation on any of them, the login form, the API docs and the admin included."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from playwright.sync_api import Browser, ConsoleMessage

from tests.browser.support import LAPTOP

TOKEN = "csp-browser-owner-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

# Each violation the browser reports, with what was blocked and by which directive.
LISTEN = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


def test_every_page_carries_a_csp_its_own_scripts_satisfy(live_server_factory, browser: Browser) -> None:
    server = live_server_factory(env={"CROWS_OWNER_TOKEN": TOKEN, "CROWS_HEARTBEAT_S": "2"}).start()
    listed = server.post("/api/lists", {"text": "- write a haiku about crows", "requester": "ada"}, headers=AUTH)
    assert listed.status_code == 202, listed.text
    said = server.post("/api/nests/todo/messages", {"author": "owner", "text": "**Morning**, flock"}, headers=AUTH)
    assert said.status_code == 201, said.text
    pages = [
        "/", "/nests", "/nests/todo", "/crows/Rook", "/trust", "/lists", f"/lists/{listed.json()['list_id']}",
        "/review", "/settings", "/glossary", "/api/docs", "/admin/login/", "/no-such-page",
    ]

    context = browser.new_context(viewport=LAPTOP)
    context.add_init_script(LISTEN)
    reported: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            reported.append(message.text)

    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("console", on_console)
        # The login form first: its own page, its POST (form-action) and the redirect.
        answer = page.goto(server.url + "/login?next=/trust")
        assert answer is not None and "script-src 'self'" in answer.headers["content-security-policy"]
        page.fill("#token", TOKEN)
        page.click("button[type=submit]")
        page.wait_for_url(server.url + "/trust")
        seen: dict[str, list[str]] = {}
        for path in pages:
            answer = page.goto(server.url + path)
            assert answer is not None, path
            policy = answer.headers.get("content-security-policy", "")
            assert "default-src 'self'" in policy and "script-src 'self'" in policy, (path, policy)
            assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, (path, policy)
            if page.locator("#conn").count():
                page.wait_for_selector('#conn[data-state="live"]')
            else:
                page.wait_for_load_state("networkidle")
            if path == "/api/docs":
                page.wait_for_selector(".swagger-ui .opblock")
            # A late script's violation still lands before we ask.
            page.wait_for_timeout(300)
            seen[path] = page.evaluate("window.__csp")
        violations = {path: found for path, found in seen.items() if found}
        assert violations == {} and reported == [], (violations, reported)
    finally:
        context.close()
