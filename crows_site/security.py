"""Who may act as the owner: the one gate every HTTP request passes (docs/SECURITY.md).

The same decision serves two doors: `OwnerGate` wraps the whole ASGI application (so the
SSE consumer, which is not a Django view, is covered too), and `OwnerGateMiddleware`
applies it inside Django (so a request that never went through ASGI, such as Django's
test client, meets the same rules). Under daphne a Django request passes both; the check
is a few dictionary look-ups.

In order, a request is refused when:
1. it arrived on a non-loopback address, or through a reverse proxy (a Forwarded,
   X-Forwarded-For or X-Real-IP header), while no CROWS_OWNER_TOKEN is set (403);
2. its Host is not in ALLOWED_HOSTS (400): DNS rebinding;
3. for /api/: its Origin is not this server's own nor in CROWS_ALLOWED_ORIGINS, or it says
   `Sec-Fetch-Site: cross-site` without such an Origin (403): cross-site requests;
4. a token is set and it carries neither `Authorization: Bearer <token>` nor the cookie
   of a live login session (401 for /api/, a redirect to /login for pages); a client
   that sent too many wrong Bearer tokens in the last minute gets 429 with Retry-After
   for any Bearer attempt (crows_site/logins.py);
5. for /api/: it changes state without `Content-Type: application/json` (415), so no
   HTML form or preflight-free `fetch` from another site can reach an action. A state
   change is a method the API takes on that path (its OpenAPI document); anything else
   goes on to the router, whose 404 or 405 says more than a 415 would.

WebSocket upgrades are refused (403): the flock speaks HTTP and Server-Sent Events only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.http.request import split_domain_port, validate_host

from crows_site.api_document import api_takes
from crows_site.logins import COOKIE_NAME, failures, owner_session_is_live, token_matches, too_many_guesses
from crows_site.middleware import HybridMiddleware
from flock.db import DATABASE_AWAY, RETRY_AFTER_S, database_away

# Set in the scope of a request OwnerGate let through, so the middleware does not decide
# (and count a wrong token) a second time.
GATE_PASSED = "crows.gate_passed"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
# Paths a visitor needs before logging in: the login page itself and the files it uses.
OPEN_PATHS = ("/login", "/logout", "/static/", "/favicon.ico")

NEEDS_TOKEN = (
    "this flock is reachable beyond loopback but has no owner token: set CROWS_OWNER_TOKEN "
    "(and ALLOWED_HOSTS) before serving it on a non-loopback address"
)


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    redirect: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    # A 429's wait, in the body as the API's other 429s carry it (RateLimitedOut).
    cooldown_s: int | None = None


def _header_bytes(value: str) -> bytes:
    # ASGI servers and Django alike hand a header over decoded as Latin-1; its bytes are
    # what the client sent (a UTF-8 token from curl, say).
    return value.encode("latin-1", errors="replace")


def _is_loopback(address: str | None) -> bool:
    # A Unix socket or an unknown address is not a network interface anyone else reaches.
    if not address:
        return True
    try:
        ip = ipaddress.ip_address(address.strip("[]").split("%", 1)[0])
    except ValueError:
        return address in ("localhost",)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _proxied(headers: dict[str, str]) -> bool:
    # A reverse proxy on this machine reaches the server over loopback, but it serves
    # whoever reaches the proxy: a forwarded request counts as a non-loopback one.
    return any(name in headers for name in ("forwarded", "x-forwarded-for", "x-real-ip"))


def _cookie(header: str, name: str) -> str:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value.strip()
    return ""


def _host_allowed(host: str) -> bool:
    domain, _port = split_domain_port(host)
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def own_origins(scheme: str, host: str) -> set[str]:
    own = f"{scheme}://{host}".lower()
    # A browser leaves the default port out of Origin; some clients keep it in Host.
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    bare = own.removesuffix(default) if default else own
    return {own, bare, *settings.CROWS_ALLOWED_ORIGINS}


def _bearer(headers: dict[str, str]) -> bytes | None:
    """The token of an `Authorization: Bearer` header, as sent; None without one."""
    scheme, _, given = headers.get("authorization", "").partition(" ")
    return _header_bytes(given.strip()) if scheme.lower() == "bearer" else None


def session_to_check(path: str, headers: dict[str, str]) -> str:
    """The login cookie whose session decides this request, or "" when none does: no
    token is set, the path is open, or a Bearer header decides instead. Asked before
    `decide`, which takes the session's answer: reading it is a database query, which
    the ASGI door must make off its event loop."""
    if not settings.CROWS_OWNER_TOKEN or path.startswith(OPEN_PATHS) or _bearer(headers) is not None:
        return ""
    return _cookie(headers.get("cookie", ""), COOKIE_NAME)


def _token_refusal(headers: dict[str, str], *, client: str | None, session_live: bool) -> Refusal | None:
    """None when the request carries the owner's credentials (or none are needed); a 429
    for a client over its wrong-token limit; otherwise a bare 401 for decide to word."""
    if not settings.CROWS_OWNER_TOKEN:
        return None
    bearer = _bearer(headers)
    if bearer is None:
        return None if session_live else Refusal(401, "")
    wait = failures.retry_after_s(client)
    if wait:
        return Refusal(429, too_many_guesses(wait), headers=(("Retry-After", str(wait)),), cooldown_s=wait)
    if token_matches(bearer):
        return None
    failures.failed(client)
    return Refusal(401, "")


def decide(
    *,
    method: str,
    path: str,
    headers: dict[str, str],
    scheme: str,
    server_address: str | None,
    query: str = "",
    client: str | None = None,
    session_live: bool = False,
) -> Refusal | None:
    """None when the request may go on; otherwise what to answer. `headers` has
    lower-case names; `query` is the query string, kept on the way to the login page;
    `client` the peer's address (wrong tokens are counted against it); `session_live`
    whether the cookie session_to_check named is a live login."""
    is_api = path.startswith("/api/") or path == "/api"
    if not settings.CROWS_OWNER_TOKEN and (not _is_loopback(server_address) or _proxied(headers)):
        return Refusal(403, NEEDS_TOKEN)

    host = headers.get("host", "")
    if not _host_allowed(host):
        return Refusal(400, f"the Host header {host[:100]!r} is not one this flock answers to (ALLOWED_HOSTS)")

    if is_api:
        origin = headers.get("origin", "").strip().lower()
        own = own_origins(scheme, host)
        if origin and origin not in own:
            return Refusal(403, f"requests from another site are not allowed (Origin {origin[:100]!r}); "
                                "add it to CROWS_ALLOWED_ORIGINS if it is yours")
        if not origin and headers.get("sec-fetch-site", "").strip().lower() == "cross-site":
            return Refusal(403, "requests from another site are not allowed (Sec-Fetch-Site: cross-site)")

    token_refusal = None if path.startswith(OPEN_PATHS) else _token_refusal(headers, client=client, session_live=session_live)
    if token_refusal is not None and token_refusal.status == 429:
        return token_refusal
    if token_refusal is not None:
        # /api/docs is a page a person opens: it goes to the login page like the others.
        if is_api and path != "/api/docs":
            return Refusal(
                401,
                "the owner token is required: send Authorization: Bearer <CROWS_OWNER_TOKEN> "
                "or log in at /login",
                headers=(("WWW-Authenticate", 'Bearer realm="so-many-crows"'),),
            )
        wanted = f"{path}?{query}" if query else path
        return Refusal(302, "log in first", redirect="/login?next=" + quote(wanted, safe="/"))

    if is_api and method not in SAFE_METHODS and api_takes(method, path):
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            shown = content_type or "none"
            return Refusal(415, f"the body must be JSON sent as Content-Type: application/json (got {shown})")
    return None


# ---------------------------------------------------------------------------------------
# The ASGI door: every path, the SSE consumer included.
# ---------------------------------------------------------------------------------------

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _scope_headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        # Repeated Cookie headers join with "; ", any other repeated header with ", ".
        headers[key] = f"{headers[key]}{'; ' if key == 'cookie' else ', '}{text}" if key in headers else text
    return headers


class OwnerGate:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        server = scope.get("server")
        client = scope.get("client")
        path = scope.get("path", "")
        headers = _scope_headers(scope.get("headers", []))
        session_key = session_to_check(path, headers)
        try:
            session_live = bool(session_key) and await sync_to_async(owner_session_is_live)(session_key)
        except DatabaseError as exc:
            await _answer(send, as_response(_database_away(exc)))
            return
        refusal = decide(
            method=scope.get("method", "GET").upper(),
            path=path,
            headers=headers,
            scheme=scope.get("scheme", "http"),
            server_address=str(server[0]) if server else None,
            query=scope.get("query_string", b"").decode("latin-1"),
            client=str(client[0]) if client else None,
            session_live=session_live,
        )
        if refusal is None:
            scope[GATE_PASSED] = True
            # `send` goes on unwrapped: the stream consumer reads the server's transport
            # through it to respect back-pressure (flock/stream/consumer.py).
            await self.app(scope, receive, send)
            return
        await _answer(send, as_response(refusal))


async def _answer(send: Send, response: HttpResponse) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": response.status_code,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.items()],
        }
    )
    await send({"type": "http.response.body", "body": response.content})


def _database_away(exc: DatabaseError) -> Refusal:
    """A login session that cannot be read: the database's own 503, as the API words it."""
    if not database_away(exc):
        raise exc
    return Refusal(503, DATABASE_AWAY, headers=(("Retry-After", str(RETRY_AFTER_S)),))


async def refuse_websocket(scope: Scope, receive: Receive, send: Send) -> None:
    """Close an upgrade before accepting it: daphne answers the handshake with 403. (Without
    an app for the scope, channels raises and the client gets a 500.)"""
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.close", "code": 1008})


def as_response(refusal: Refusal) -> HttpResponse:
    response: HttpResponse
    if refusal.redirect:
        response = HttpResponseRedirect(refusal.redirect)
    else:
        body: dict[str, Any] = {"message": refusal.message}
        if refusal.cooldown_s is not None:
            body["cooldown_s"] = refusal.cooldown_s
        response = JsonResponse(body, status=refusal.status)
    for name, value in refusal.headers:
        response[name] = value
    return response


# ---------------------------------------------------------------------------------------
# The Django door, for requests that did not come through OwnerGate.
# ---------------------------------------------------------------------------------------


class OwnerGateMiddleware(HybridMiddleware):
    def before(self, request: HttpRequest) -> HttpResponse | None:
        if _gate_passed(request):
            return None
        refusal = _refusal_for(request)
        return as_response(refusal) if refusal is not None else None

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        # The decision may read the login session from the database: off the event loop.
        early = None if _gate_passed(request) else await sync_to_async(self.before)(request)
        return early if early is not None else await self.get_response(request)


def _gate_passed(request: HttpRequest) -> bool:
    scope = getattr(request, "scope", None)
    return bool(scope and scope.get(GATE_PASSED))


def _refusal_for(request: HttpRequest) -> Refusal | None:
    scope = getattr(request, "scope", None)
    server = scope.get("server") if scope else None
    headers = {key.lower(): value for key, value in request.headers.items()}
    if "host" not in headers:
        # A request built without a Host header (Django's test client) names the
        # server the way Django's own get_host() falls back to.
        name, port = request.META.get("SERVER_NAME", ""), str(request.META.get("SERVER_PORT", ""))
        headers["host"] = name if port in ("", "80", "443") else f"{name}:{port}"
    session_key = session_to_check(request.path, headers)
    return decide(
        method=(request.method or "GET").upper(),
        path=request.path,
        headers=headers,
        scheme=request.scheme or "http",
        server_address=str(server[0]) if server else None,
        query=request.META.get("QUERY_STRING", ""),
        client=request.META.get("REMOTE_ADDR"),
        session_live=bool(session_key) and owner_session_is_live(session_key),
    )
