"""The owner's logins and what guessing costs (docs/SECURITY.md "The owner token").

A browser that types the owner token at /login gets a **server-side session**: a row in
Django's session table holding a keyed digest of the token, found by a fresh random key
that is the cookie's only content. /logout deletes the row, so a copied cookie stops
working at once; the row expires after CROWS_SESSION_DAYS; changing CROWS_OWNER_TOKEN or
SECRET_KEY ends every session (the digest no longer matches, or no longer decodes).

Guessing is rate-limited per client address: a wrong token at /login, or a wrong
`Authorization: Bearer`, counts as a failure; a client with CROWS_AUTH_FAILURES_PER_MIN
failures in the last minute gets 429 with Retry-After for every login or Bearer attempt
until the oldest of them is a minute old, right token or not (else the limit would only
slow the wrong guesses). A logged-in browser's cookie is not a guess and is never
limited. The counts live in this process: N server processes allow N times the rate.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import threading
import time
from collections import deque
from importlib import import_module

from django.conf import settings
from django.contrib.sessions.backends.base import SessionBase
from django.http import HttpRequest

COOKIE_NAME = "crows_owner"
# The session's field that says whose it is: the token's digest at login.
OWNER_FIELD = "crows_owner"
FAILURE_WINDOW_S = 60.0
# Addresses remembered at once; past this, those whose failures are all old go first,
# then the longest-remembered, so a flood of addresses cannot grow the table for ever.
MAX_TRACKED_CLIENTS = 10_000


def token_fingerprint(token: str) -> str:
    """A keyed digest of the token, never the token itself, kept in the session row."""
    key = f"crows-owner:{settings.SECRET_KEY}".encode()
    return hmac.new(key, token.encode(), hashlib.sha256).hexdigest()


def token_matches(given: str | bytes) -> bool:
    """`given` as typed (the login form's text) or as sent (a header's bytes)."""
    token = settings.CROWS_OWNER_TOKEN
    raw = given if isinstance(given, bytes) else given.encode()
    return bool(token) and hmac.compare_digest(raw, token.encode())


def session_max_age_s() -> int:
    return int(settings.CROWS_SESSION_DAYS) * 24 * 3600


def _store(session_key: str | None = None) -> SessionBase:
    engine = import_module(settings.SESSION_ENGINE)
    store: SessionBase = engine.SessionStore(session_key=session_key)
    return store


def start_owner_session() -> str:
    """A new session for the owner, under a fresh random key (the cookie's value)."""
    store = _store()
    # Sessions past their time are deleted as new ones begin: the table holds only
    # live logins and those not yet swept.
    store.clear_expired()
    store[OWNER_FIELD] = token_fingerprint(settings.CROWS_OWNER_TOKEN)
    store.set_expiry(session_max_age_s())
    store.create()
    return str(store.session_key)


def login_context(request: HttpRequest) -> dict[str, bool]:
    """`owner_login` for the pages: a token is set and this browser holds a login cookie
    (the gate let the page through, so it is a live one), so the page offers Log out."""
    return {"owner_login": bool(settings.CROWS_OWNER_TOKEN) and COOKIE_NAME in request.COOKIES}


def end_owner_session(session_key: str) -> None:
    if session_key:
        _store().delete(session_key)


def _plausible_key(session_key: str) -> bool:
    # Django's keys are 32 lower-case letters and digits; anything else is not worth a query.
    return 8 <= len(session_key) <= 40 and session_key.isascii() and session_key.isalnum()


def owner_session_is_live(session_key: str) -> bool:
    """Whether `session_key` names an unexpired session made by logging in with the
    current owner token. Reads the database."""
    if not settings.CROWS_OWNER_TOKEN or not _plausible_key(session_key):
        return False
    data = _store(session_key).load()  # {} when missing, expired or not decodable
    held = data.get(OWNER_FIELD, "")
    return isinstance(held, str) and hmac.compare_digest(held, token_fingerprint(settings.CROWS_OWNER_TOKEN))


# ---------------------------------------------------------------------------------------
# Failures per client address
# ---------------------------------------------------------------------------------------


def client_bucket(address: str | None) -> str:
    """Who a failure is counted against: the client's address, an IPv6 one by its /64
    (one host is usually given a whole /64 to pick addresses from)."""
    text = (address or "").strip("[]").split("%", 1)[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return text or "unknown"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip)


class FailureLimit:
    """Failed guesses per client bucket in a sliding minute."""

    def __init__(self) -> None:
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _allowed() -> int:
        return int(settings.CROWS_AUTH_FAILURES_PER_MIN)

    def _recent(self, bucket: str, now: float) -> deque[float] | None:
        times = self._failures.get(bucket)
        if times is None:
            return None
        while times and times[0] <= now - FAILURE_WINDOW_S:
            times.popleft()
        if not times:
            del self._failures[bucket]
            return None
        return times

    def retry_after_s(self, address: str | None) -> int:
        """0 when the client may try; otherwise the whole seconds until it may."""
        now = time.monotonic()
        with self._lock:
            times = self._recent(client_bucket(address), now)
            if times is None or len(times) < self._allowed():
                return 0
            # It may try again once enough of its failures are a minute old.
            oldest_that_counts = times[len(times) - self._allowed()]
            return max(1, math.ceil(oldest_that_counts + FAILURE_WINDOW_S - now))

    def failed(self, address: str | None) -> None:
        now = time.monotonic()
        bucket = client_bucket(address)
        with self._lock:
            times = self._recent(bucket, now)
            if times is None:
                if len(self._failures) >= MAX_TRACKED_CLIENTS:
                    self._forget_some(now)
                times = self._failures.setdefault(bucket, deque())
            times.append(now)
            # More than the limit is never needed to know the client is over it.
            while len(times) > self._allowed():
                times.popleft()

    def succeeded(self, address: str | None) -> None:
        with self._lock:
            self._failures.pop(client_bucket(address), None)

    def _forget_some(self, now: float) -> None:
        for bucket in list(self._failures):
            self._recent(bucket, now)
        while len(self._failures) >= MAX_TRACKED_CLIENTS:
            del self._failures[next(iter(self._failures))]

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()


failures = FailureLimit()


def too_many_guesses(retry_after_s: int) -> str:
    return (
        f"too many wrong owner tokens from this address: try again in {retry_after_s} s "
        f"(at most {settings.CROWS_AUTH_FAILURES_PER_MIN} a minute)"
    )
