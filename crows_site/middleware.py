"""Every /api/ answer is JSON with a {"message"}, whoever produced it.

django-ninja answers a wrong method with a plain-text 405, Django answers its own errors
in HTML, and a NUL in a path would reach PostgreSQL (which refuses it)
as a 500. ApiErrorsAsJson turns all of those into the API's one error shape; NotMigratedYet
has a page asked of an unmigrated database say what to run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, JsonResponse

from crows_site.api_document import documented_query_names
from crows_site.parser import too_large
from flock.db import NOT_MIGRATED, lacks_migrations

_WORDS = {
    400: "the request is malformed",
    403: "that is not allowed here",
    404: "no such endpoint",
    405: "that method is not allowed here",
}


class HybridMiddleware:
    """A middleware that is sync and async alike: under daphne the whole chain stays async
    up to the view, with no thread hop for it (a sync-only one costs two per request).
    A subclass says what happens before the rest of the chain (`before`: a response ends
    the request there) and to its response (`after`)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(self.get_response):
            markcoroutinefunction(self)

    def before(self, request: HttpRequest) -> HttpResponse | None:
        return None

    def after(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        return response

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self.__acall__(request)
        early = self.before(request)
        return early if early is not None else self.after(request, self.get_response(request))

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        early = self.before(request)
        return early if early is not None else self.after(request, await self.get_response(request))


class ApiErrorsAsJson(HybridMiddleware):
    def before(self, request: HttpRequest) -> HttpResponse | None:
        if not request.path.startswith("/api/"):
            return None
        if "\x00" in request.path:
            return JsonResponse({"message": "the path must not contain NUL characters"}, status=400)
        # PostgreSQL cannot even compare a string holding NUL: say so before a filter meets it.
        # Only for the parameters the API reads; any other is ignored, NUL or not.
        read = documented_query_names()
        for name, values in request.GET.lists():
            if name in read and any("\x00" in value for value in values):
                return JsonResponse({"message": f"the query parameter {name} must not contain NUL characters"}, status=400)
        return None

    def after(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        return _as_json(request, response) if request.path.startswith("/api/") else response


def _as_json(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    if response.status_code < 400 or response.get("Content-Type", "").startswith("application/json"):
        return response
    status = response.status_code
    message = _WORDS.get(status, "the request could not be handled")
    if status == 405:
        allowed = response.get("Allow", "")
        message = f"{request.method} is not allowed on {request.path}" + (f"; use {allowed}" if allowed else "")
    elif status == 404:
        message = f"no such endpoint: {request.method} {request.path}"
    elif status == 413:
        message = too_large()
    replacement = JsonResponse({"message": message}, status=status)
    if response.has_header("Allow"):
        replacement["Allow"] = response["Allow"]
    return replacement


class NotMigratedYet(HybridMiddleware):
    """A page asked of a server whose database lacks migrations (started before `manage.py
    migrate`, its worker off) answers 503 saying what to run, not a bare 500. The API's
    own handler does the same for /api/ (crows_site/api.py)."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not (missing := lacks_migrations(exception)):
            return None
        return HttpResponse(NOT_MIGRATED.format(count=missing), status=503, content_type="text/plain; charset=utf-8")
