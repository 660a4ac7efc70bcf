"""The owner's login page: the one place a browser trades CROWS_OWNER_TOKEN for a cookie
(docs/SECURITY.md)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from crows_site.security import COOKIE_MAX_AGE_S, COOKIE_NAME, cookie_value, token_matches


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
    if not token_matches(request.POST.get("token", "")):
        context = {"token_required": required, "next": next_url, "error": "That is not this flock's owner token."}
        return render(request, "crows_site/login.html", context, status=401)
    response = HttpResponseRedirect(next_url)
    response.set_cookie(
        COOKIE_NAME,
        cookie_value(settings.CROWS_OWNER_TOKEN),
        max_age=COOKIE_MAX_AGE_S,
        httponly=True,
        samesite="Strict",
        secure=_over_https(request),
        path="/",
    )
    return response


@require_http_methods(["POST"])
def logout(request: HttpRequest) -> HttpResponse:
    response = HttpResponseRedirect("/login")
    response.delete_cookie(COOKIE_NAME, path="/", samesite="Strict")
    return response
