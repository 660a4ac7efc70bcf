"""The one NinjaAPI. Each app mounts its router here; errors are mapped to HTTP once, so
every error body is {"message": ...} with the status the contract names."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db.utils import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema

from crows_site.flightlog import router as flightlog_router
from crows_site.parser import StrictJsonParser, too_large
from crows_site.state import router as state_router
from flock.api import router as flock_router
from flock.db import DATABASE_AWAY, NOT_MIGRATED, RETRY_AFTER_S, database_away, lacks_migrations
from flock.errors import CrowsError, RateLimited
from flock.queries import roster_names
from flock.schemas import API_ERROR, ID_MAX
from flock.stream.consumer import CURSOR_MAX
from nests import queries as nest_queries
from nests.api import router as nests_router
from trust.api import router as trust_router

log = logging.getLogger("crows.api")

def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}},
    }


# GET /api/events is served by the SSE consumer (flock/stream/consumer.py), not by ninja,
# so its description is added to the document by hand (docs/API.md, "The event stream").
EVENTS_OPERATION: dict[str, Any] = {
    "get": {
        "operationId": "event_stream",
        "summary": "The event stream (Server-Sent Events)",
        "description": (
            "Replays stored events after the cursor, then follows live events, with no gap and "
            "no duplicate. Each frame is `id: <event id>`, `event: <name>`, `data: <JSON payload>`; "
            "the first chunk is `retry: 2000` and the comment `: connected`; a `: ping` comment "
            "comes every CROWS_HEARTBEAT_S. Without list_id or nest_id this is the firehose of "
            "every event, starting live unless a cursor is given. A client more than "
            "CROWS_STREAM_MAX_BUFFER_KB behind is disconnected and resumes with Last-Event-ID. "
            "Event names are listed in GET /api/state `capabilities`; payloads in docs/API.md."
        ),
        "tags": ["stream"],
        "parameters": [
            {"name": "since", "in": "query", "required": False, "description": "replay events after this id",
             "schema": {"type": "integer", "minimum": 0, "maximum": CURSOR_MAX}},
            {"name": "list_id", "in": "query", "required": False, "description": "one list's events",
             "schema": {"type": "string", "minLength": 1, "maxLength": ID_MAX}},
            {"name": "nest_id", "in": "query", "required": False, "description": "one nest's messages",
             "schema": {"type": "string", "minLength": 1, "maxLength": ID_MAX}},
            {"name": "Last-Event-ID", "in": "header", "required": False,
             "description": "the cursor a reconnecting EventSource sends; wins over since",
             "schema": {"type": "integer", "minimum": 0, "maximum": CURSOR_MAX}},
        ],
        "responses": {
            "200": {
                "description": "an endless text/event-stream",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
            "400": _error("a bad cursor, an empty key, two keys at once, or a Host not in ALLOWED_HOSTS"),
            "401": _error("CROWS_OWNER_TOKEN is set and neither the bearer token nor the login cookie came"),
            "403": _error("a foreign Origin, or a non-loopback request while no owner token is set"),
            "404": _error("no such list or nest"),
            "405": _error("anything but GET or HEAD"),
            "429": {
                "description": "too many wrong owner tokens from this address in a minute (Retry-After)",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RateLimitedOut"}}},
            },
            "503": _error("the database cannot say whether the list or nest exists (Retry-After)"),
        },
    }
}


class CrowsAPI(NinjaAPI):
    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        schema["paths"]["/api/events"] = EVENTS_OPERATION
        schema.setdefault("components", {}).setdefault("securitySchemes", {})["owner_token"] = {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "CROWS_OWNER_TOKEN: every /api/ request needs it (or the /login cookie) when the server "
                "has one; without one the server answers on loopback only, to anyone (docs/SECURITY.md)"
            ),
        }
        # Every operation, the stream included: the bearer token, or nothing (the empty
        # requirement) on a server without CROWS_OWNER_TOKEN, which answers loopback only.
        schema["security"] = [{"owner_token": []}, {}]
        _state_the_roster(schema)
        return schema


def _state_the_roster(schema: OpenAPISchema) -> None:
    """A nest's core crows come from the living roster: the document names it as it stands
    when it is fetched (an enum), so a request it allows is not refused for a stranger. The
    roster changes only when a crow is hatched or retired."""
    nest_in = schema.get("components", {}).get("schemas", {}).get("NestIn")
    if nest_in is None:
        return
    try:
        roster = roster_names()
    except DatabaseError:
        # The database is away (or not migrated yet, when the gate builds the document at
        # start-up and the start-up check says so in its own one line): the document is
        # still served, the roster unstated (a stranger still gets the 400 naming it).
        log.debug("the roster could not be read for the API document")
        return
    nest_in["properties"]["crows"]["items"] = {"type": "string", "enum": roster}
    # A change of a nest's core names roster crows too (docs/GOVERNANCE.md, 3).
    members_in = schema["components"]["schemas"].get("NestMembersIn")
    if members_in is not None:
        for field in ("add", "remove"):
            members_in["properties"][field]["items"] = {"type": "string", "enum": roster}


api = CrowsAPI(title="so-many-crows", version="1", urls_namespace="api", parser=StrictJsonParser())


def _describe(errors: list[dict]) -> str:
    parts = []
    for error in errors[:5]:
        if error.get("type") == API_ERROR:
            # A schema's own words (flock/schemas.py): they name the field already.
            parts.append(error.get("msg", "is invalid"))
            continue
        where = ".".join(str(p) for p in error.get("loc", []) if p not in ("body", "payload", "query", "path"))
        if error.get("type") == "missing" and not where:
            parts.append("a JSON object body is required")
            continue
        parts.append(_rule_broken(where, error))
    return "; ".join(parts) or "the request is invalid"


def _rule_broken(where: str, error: dict) -> str:
    """pydantic's finding in the API's words (a sentence naming the field and the rule), for
    the parameters no schema words itself."""
    kind, ctx = error.get("type"), error.get("ctx") or {}
    if not where:
        return error.get("msg", "is invalid")
    if kind == "missing":
        return f"{where} is required"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{where} must be a whole number"
    bounds = {"ge": "at least", "le": "at most", "gt": "more than", "lt": "less than"}
    bound = next((b for b in bounds if b in ctx), None)
    if bound and kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return f"{where} must be {bounds[bound]} {ctx[bound]}"
    if kind == "string_too_long":
        return f"{where} must be at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return f"{where} must be at least {ctx.get('min_length')} characters"
    if kind in ("literal_error", "enum"):
        return f"{where} must be {ctx.get('expected')}"
    return f"{where}: {error.get('msg', 'is invalid')}"


@api.exception_handler(CrowsError)
def on_crows_error(request: HttpRequest, exc: CrowsError) -> HttpResponse:
    # An action checks its input before it looks the room up (nothing is written either
    # way); only this error path pays for asking whether the room exists.
    if exc.status == 400 and (unknown := _unknown_room(request)) is not None:
        return unknown
    response = api.create_response(request, exc.body(), status=exc.status)
    if isinstance(exc, RateLimited):
        # What the body's cooldown_s says, where HTTP clients look for it (RFC 9110).
        response["Retry-After"] = str(exc.cooldown_s)
    return response


def _unknown_room(request: HttpRequest) -> HttpResponse | None:
    """The 404 for a path naming a room that does not exist, or None.

    EVENTS.md answers a post to an unknown nest with 404 and bad input with 400; a request
    that is both gets the 404, as the endpoints whose bodies pass validation already do
    (the view looks the room up first): the room is what the request is about."""
    match = getattr(request, "resolver_match", None)
    nest_id = match.kwargs.get("nest_id") if match is not None else None
    if not isinstance(nest_id, str) or len(nest_id) > ID_MAX or "\x00" in nest_id:
        return None
    try:
        if nest_queries.room_exists(nest_id):
            return None
    except DatabaseError:
        return None  # the database is away: the 400 about the input still stands
    return api.create_response(request, {"message": f"no such nest: {nest_id!r}"}, status=404)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    on_the_path = any((error.get("loc") or ("",))[0] == "path" for error in exc.errors)
    if not on_the_path and (unknown := _unknown_room(request)) is not None:
        return unknown
    return api.create_response(request, {"message": _describe(exc.errors)}, status=400)


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return api.create_response(request, {"message": too_large()}, status=413)


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja wraps whatever the body parser raised in a generic 400; the parser's own
    # refusal (a NUL, a lone surrogate) names the problem, so it is the one sent.
    if exc.status_code == 400 and (unknown := _unknown_room(request)) is not None:
        return unknown  # a body that is not JSON, posted to a room that does not exist
    if isinstance(exc.__cause__, CrowsError):
        return on_crows_error(request, exc.__cause__)
    message = str(exc) or "the request could not be handled"
    if exc.status_code == 400 and "parse" in message.lower():
        message = "the body is not valid JSON"
    return api.create_response(request, {"message": message}, status=exc.status_code)


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return api.create_response(request, {"message": "not allowed"}, status=401)


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def on_database_away(request: HttpRequest, exc: Exception) -> HttpResponse:
    if not database_away(exc):
        return on_unexpected(request, exc)
    log.warning("the database did not answer %s %s: %s", request.method, request.path, exc)
    response = api.create_response(request, {"message": DATABASE_AWAY}, status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    return response


@api.exception_handler(Exception)
def on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    if missing := lacks_migrations(exc):
        # A server started before `manage.py migrate` (its worker off, so nothing stopped
        # it at start-up): every request is this, and it says what to do.
        log.error("%s %s: %s", request.method, request.path, NOT_MIGRATED.format(count=missing))
        response = api.create_response(request, {"message": NOT_MIGRATED.format(count=missing)}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
    log.exception("unexpected error on %s %s", request.method, request.path)
    return api.create_response(request, {"message": "the flock tripped over something unexpected"}, status=500)


def mount() -> None:
    api.add_router("", state_router)
    api.add_router("", flock_router)
    api.add_router("", flightlog_router)
    api.add_router("", trust_router)
    api.add_router("", nests_router)


mount()
