"""Logins and guessing against a real daphne (docs/SECURITY.md "The owner token"): a
cookie copied before /logout is refused after it; the 11th wrong login or Bearer token
in a minute is a 429 with Retry-After."""

from __future__ import annotations

import re

import httpx
import pytest

pytestmark = pytest.mark.live

TOKEN = "live-login-owner-token-0123456789"


@pytest.fixture
def server(live_server_factory):
    return live_server_factory(env={"CROWS_OWNER_TOKEN": TOKEN, "CROWS_EMBEDDED_WORKER": "0"}).start()


def login_form(browser: httpx.Client) -> str:
    form = browser.get("/login")
    assert form.status_code == 200
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)


def test_a_cookie_copied_before_logout_gets_401_after_it(server):
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        csrf = login_form(browser)
        answer = browser.post("/login", data={"token": TOKEN, "next": "/", "csrfmiddlewaretoken": csrf})
        assert answer.status_code == 302
        copied = browser.cookies["crows_owner"]
        assert TOKEN not in copied
        assert browser.get("/api/state").status_code == 200

        # Someone else holding a copy of the cookie is the owner until logout ...
        stolen = {"Cookie": f"crows_owner={copied}"}
        assert httpx.get(f"{server.url}/api/state", headers=stolen, timeout=30).status_code == 200

        out = browser.post("/logout", data={"csrfmiddlewaretoken": browser.cookies["csrftoken"]})
        assert out.status_code == 302 and out.headers["location"] == "/login"

        # ... and not a moment after: the API, the stream and the pages all refuse it.
        after = httpx.get(f"{server.url}/api/state", headers=stolen, timeout=30)
        assert after.status_code == 401 and after.json()["message"]
        assert httpx.get(f"{server.url}/api/events?since=0", headers=stolen, timeout=30).status_code == 401
        page = httpx.get(f"{server.url}/trust", headers=stolen, timeout=30)
        assert page.status_code == 302 and page.headers["location"].startswith("/login")


def test_the_eleventh_wrong_login_in_a_minute_is_a_429_with_retry_after(server):
    with httpx.Client(base_url=server.url, timeout=30) as guesser:
        csrf = login_form(guesser)
        statuses = [
            guesser.post("/login", data={"token": f"guess-{n}", "csrfmiddlewaretoken": csrf}).status_code
            for n in range(10)
        ]
        assert statuses == [401] * 10
        eleventh = guesser.post("/login", data={"token": "guess-10", "csrfmiddlewaretoken": csrf})
        assert eleventh.status_code == 429
        assert 1 <= int(eleventh.headers["retry-after"]) <= 60
        right = guesser.post("/login", data={"token": TOKEN, "csrfmiddlewaretoken": csrf})
        assert right.status_code == 429 and "crows_owner" not in right.cookies


def test_the_eleventh_wrong_bearer_token_in_a_minute_is_a_429_with_retry_after(server):
    statuses = [
        server.get("/api/state", headers={"Authorization": f"Bearer guess-{n}"}).status_code for n in range(10)
    ]
    assert statuses == [401] * 10
    eleventh = server.get("/api/events?since=0", headers={"Authorization": "Bearer guess-10"})
    assert eleventh.status_code == 429
    assert 1 <= int(eleventh.headers["retry-after"]) <= 60
    assert eleventh.json()["cooldown_s"] == int(eleventh.headers["retry-after"])
    assert server.get("/api/state", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 429
