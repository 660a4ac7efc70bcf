"""The one NinjaAPI. Each app mounts its router here; errors are mapped to HTTP once, so
every error body is {"message": ...} with the status the contract names."""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from crows_site.parser import StrictJsonParser
from flock.errors import CrowsError

log = logging.getLogger("crows.api")

api = NinjaAPI(title="so-many-crows", version="1", urls_namespace="api", parser=StrictJsonParser())


def _describe(errors: list[dict]) -> str:
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error.get("loc", []) if p not in ("body", "payload", "query", "path"))
        what = error.get("msg", "is invalid")
        if error.get("type") == "missing":
            if not where:
                parts.append("a JSON object body is required")
                continue
            what = "is required"
        parts.append(f"{where}: {what}" if where else what)
    return "; ".join(parts) or "the request is invalid"


@api.exception_handler(CrowsError)
def on_crows_error(request: HttpRequest, exc: CrowsError) -> HttpResponse:
    return api.create_response(request, exc.body(), status=exc.status)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return api.create_response(request, {"message": _describe(exc.errors)}, status=400)


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return api.create_response(request, {"message": "the request body is too large"}, status=413)


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    message = str(exc) or "the request could not be handled"
    if exc.status_code == 400 and "parse" in message.lower():
        message = "the body is not valid JSON"
    return api.create_response(request, {"message": message}, status=exc.status_code)


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return api.create_response(request, {"message": "not allowed"}, status=401)


@api.exception_handler(Exception)
def on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    log.exception("unexpected error on %s %s", request.method, request.path)
    return api.create_response(request, {"message": "the flock tripped over something unexpected"}, status=500)


def mount() -> None:
    from crows_site.flightlog import router as flightlog_router
    from crows_site.state import router as state_router
    from flock.api import router as flock_router
    from nests.api import router as nests_router
    from trust.api import router as trust_router

    api.add_router("", state_router)
    api.add_router("", flock_router)
    api.add_router("", flightlog_router)
    api.add_router("", trust_router)
    api.add_router("", nests_router)


mount()
