"""The owner's login page: the one place a browser trades CROWS_OWNER_TOKEN for a login
session (docs/SECURITY.md; crows_site/logins.py)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from crows_site.logins import (
    COOKIE_NAME,
    end_owner_session,
    failures,
    session_max_age_s,
    start_owner_session,
    token_matches,
    too_many_guesses,
)


def _next(request: HttpRequest, value: str) -> str:
    # Only a path on this server: a login link must not become an open redirect.
    if value.startswith("/") and url_has_allowed_host_and_scheme(value, allowed_hosts=None):
        return value
    return "/"


def _over_https(request: HttpRequest) -> bool:
    # Behind the TLS proxy docs/SECURITY.md describes, the request reaches daphne as plain
    # HTTP; the proxy says how the browser came. Trusting the header only makes the cookie
    # stricter: a client that lies about HTTPS gets a cookie its browser will not send back.
    forwarded = request.headers.get("X-Forwarded-Proto", "").split(",", 1)[0].strip().lower()
    standard = request.headers.get("Forwarded", "").lower().replace(" ", "")
    return request.is_secure() or forwarded == "https" or "proto=https" in standard


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def login(request: HttpRequest) -> HttpResponse:
    required = bool(settings.CROWS_OWNER_TOKEN)
    if request.method != "POST":
        next_url = _next(request, request.GET.get("next", "/"))
        return render(request, "crows_site/login.html", {"token_required": required, "next": next_url})
    next_url = _next(request, request.POST.get("next", "/"))
    if not required:
        return HttpResponseRedirect(next_url)
    client = request.META.get("REMOTE_ADDR")
    # Over the limit, even the right token waits: otherwise the limit would only slow
    # the wrong guesses (crows_site/logins.py).
    if wait := failures.retry_after_s(client):
        context = {"token_required": required, "next": next_url, "error": too_many_guesses(wait)}
        response = render(request, "crows_site/login.html", context, status=429)
        response["Retry-After"] = str(wait)
        return response
    if not token_matches(request.POST.get("token", "")):
        failures.failed(client)
        context = {"token_required": required, "next": next_url, "error": "That is not this flock's owner token."}
        return render(request, "crows_site/login.html", context, status=401)
    failures.succeeded(client)
    # A fresh session, with a fresh key, for every login; the cookie holds only its key.
    response = HttpResponseRedirect(next_url)
    response.set_cookie(
        COOKIE_NAME,
        start_owner_session(),
        max_age=session_max_age_s(),
        httponly=True,
        samesite="Strict",
        secure=_over_https(request),
        path="/",
    )
    return response


@require_http_methods(["POST"])
def logout(request: HttpRequest) -> HttpResponse:
    # The session ends on the server: a copy of the cookie stops working with it.
    end_owner_session(request.COOKIES.get(COOKIE_NAME, ""))
    response = HttpResponseRedirect("/login")
    response.delete_cookie(COOKIE_NAME, path="/", samesite="Strict")
    return response
