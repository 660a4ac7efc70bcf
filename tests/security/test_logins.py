"""Owner logins and what guessing costs (docs/SECURITY.md "The owner token"), through
Django's test client: a login is a server-side session with a fresh key, /logout ends it,
it expires after CROWS_SESSION_DAYS; wrong tokens at /login or as a Bearer are limited
per client address; a short token stops start-up; `manage.py owner_token` makes one."""

from __future__ import annotations

import io
import re
import subprocess
from datetime import timedelta

import pytest
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.test import Client, override_settings
from django.utils import timezone

from crows_site import logins
from crows_site.logins import COOKIE_NAME, client_bucket

pytestmark = pytest.mark.django_db

TOKEN = "a-long-enough-owner-token-for-tests"
owner_token = override_settings(CROWS_OWNER_TOKEN=TOKEN)


def log_in(browser: Client, token: str = TOKEN, **extra: str):
    return browser.post("/login", {"token": token, "next": "/"}, **extra)


@owner_token
def test_every_login_is_a_fresh_server_side_session_and_the_cookie_holds_only_its_key():
    first, second = Client(), Client()
    one, two = log_in(first), log_in(second)
    assert one.status_code == two.status_code == 302
    keys = {one.cookies[COOKIE_NAME].value, two.cookies[COOKIE_NAME].value}
    assert len(keys) == 2 and TOKEN not in "".join(keys)
    assert set(Session.objects.values_list("session_key", flat=True)) >= keys
    assert first.get("/api/state").status_code == 200 and second.get("/trust").status_code == 200


@owner_token
def test_logout_ends_the_session_so_a_copied_cookie_stops_working():
    browser = Client()
    log_in(browser)
    copied = browser.cookies[COOKIE_NAME].value
    thief = Client()
    thief.cookies[COOKIE_NAME] = copied
    assert thief.get("/api/state").status_code == 200

    out = browser.post("/logout")
    assert out.status_code == 302 and out.cookies[COOKIE_NAME].value == ""
    assert not Session.objects.filter(session_key=copied).exists()
    refused = thief.get("/api/state")
    assert refused.status_code == 401 and refused.json()["message"]
    assert thief.get("/trust").status_code == 302


@owner_token
@override_settings(CROWS_SESSION_DAYS=7)
def test_a_session_lasts_crows_session_days_and_not_a_moment_more():
    browser = Client()
    answer = log_in(browser)
    assert int(answer.cookies[COOKIE_NAME]["max-age"]) == 7 * 86400
    session = Session.objects.get(session_key=answer.cookies[COOKIE_NAME].value)
    assert abs(session.expire_date - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)
    assert browser.get("/api/state").status_code == 200
    Session.objects.filter(pk=session.pk).update(expire_date=timezone.now() - timedelta(seconds=1))
    assert browser.get("/api/state").status_code == 401


def test_a_new_owner_token_ends_every_session():
    browser = Client()
    with override_settings(CROWS_OWNER_TOKEN=TOKEN):
        log_in(browser)
        assert browser.get("/api/state").status_code == 200
    with override_settings(CROWS_OWNER_TOKEN=TOKEN + "-rotated"):
        assert browser.get("/api/state").status_code == 401


@owner_token
def test_a_session_of_djangos_admin_is_no_owner_login():
    from django.contrib.sessions.backends.db import SessionStore

    other = SessionStore()
    other["_auth_user_id"] = "1"
    other.create()
    browser = Client()
    browser.cookies[COOKIE_NAME] = other.session_key
    assert browser.get("/api/state").status_code == 401


@owner_token
def test_the_eleventh_wrong_login_in_a_minute_is_a_429_even_with_the_right_token(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(logins.time, "monotonic", lambda: clock[0])
    guesser = Client()
    for _ in range(10):
        assert log_in(guesser, "wrong guess").status_code == 401
    refused = log_in(guesser, "wrong guess")
    assert refused.status_code == 429 and refused["Retry-After"] == "60"
    assert b"too many wrong owner tokens" in refused.content
    assert log_in(guesser).status_code == 429
    clock[0] += 30
    assert log_in(guesser)["Retry-After"] == "30"
    # Another address is not held up by this one's guesses.
    assert log_in(Client(), REMOTE_ADDR="192.0.2.10").status_code == 302
    clock[0] += 30.5
    assert log_in(guesser).status_code == 302


@owner_token
def test_wrong_bearer_tokens_are_limited_too_but_a_logged_in_browser_is_not(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(logins.time, "monotonic", lambda: clock[0])
    owner = Client()
    log_in(owner)
    script = Client()
    for _ in range(10):
        assert script.get("/api/state", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    refused = script.get("/api/state", HTTP_AUTHORIZATION="Bearer nope")
    assert refused.status_code == 429 and refused["Retry-After"] == "60"
    body = refused.json()
    assert "too many wrong owner tokens" in body["message"] and body["cooldown_s"] == 60
    assert script.get("/api/state", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 429
    assert script.post("/api/nests", {"name": "x"}, content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 429
    # No token at all is not a guess; the owner's own browser carries on.
    assert script.get("/api/state").status_code == 401
    assert owner.get("/api/state").status_code == 200
    clock[0] += 61
    assert script.get("/api/state", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_guesses_from_one_ipv6_host_count_together():
    assert client_bucket("2001:db8::1") == client_bucket("2001:db8::ffff:1") == "2001:db8::/64"
    assert client_bucket("2001:db8:0:1::1") != client_bucket("2001:db8::1")
    assert client_bucket("::ffff:192.0.2.7") == client_bucket("192.0.2.7") == "192.0.2.7"
    assert client_bucket(None) == "unknown"


def test_the_failure_table_stays_bounded(monkeypatch, settings):
    settings.CROWS_AUTH_FAILURES_PER_MIN = 3
    monkeypatch.setattr(logins, "MAX_TRACKED_CLIENTS", 50)
    limit = logins.FailureLimit()
    for n in range(500):
        for _ in range(5):
            limit.failed(f"198.51.100.{n % 250}-{n}")
    assert len(limit._failures) <= 50
    assert all(len(times) <= 3 for times in limit._failures.values())


def test_owner_token_prints_a_fresh_random_token_long_enough():
    made = set()
    for _ in range(3):
        out = io.StringIO()
        call_command("owner_token", stdout=out)
        made.add(out.getvalue().strip())
    assert len(made) == 3
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", token) for token in made)


@pytest.mark.parametrize("program", ["manage.py", "daphne"])
def test_a_five_character_token_stops_start_up_naming_the_rule(sqlite_template, tmp_path, program):
    from tests.support.server import DAPHNE, PYTHON, ROOT, base_env, free_port

    env = base_env(CROWS_DATA_DIR=str(sqlite_template.fresh_dir(f"{tmp_path.name}-short")), CROWS_OWNER_TOKEN="abcde")
    command = ([PYTHON, "manage.py", "check"] if program == "manage.py"
               else [DAPHNE, "-b", "127.0.0.1", "-p", str(free_port()), "crows_site.asgi:application"])
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr[-1000:]
    assert "CROWS_OWNER_TOKEN must be at least 24 characters, got 5" in result.stderr
    assert "Traceback" not in result.stderr


@owner_token
def test_a_logged_in_page_offers_log_out_and_a_page_without_a_token_does_not():
    browser = Client()
    log_in(browser)
    page = browser.get("/trust")
    assert b'action="/logout"' in page.content and b'name="csrfmiddlewaretoken"' in page.content


def test_without_a_token_no_page_offers_log_out(client):
    assert b'action="/logout"' not in client.get("/trust").content
