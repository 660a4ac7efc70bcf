"""Every /api/ answer is JSON with a {"message"}, whoever produced it.

django-ninja answers a wrong method with a plain-text 405, Django answers its own errors
in HTML, and a NUL in a path would reach PostgreSQL (which refuses it)
as a 500. This middleware turns all of those into the API's one error shape."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

_WORDS = {
    400: "the request is malformed",
    403: "that is not allowed here",
    404: "no such endpoint",
    405: "that method is not allowed here",
    413: "the request body is too large",
}


class ApiErrorsAsJson:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        if "\x00" in request.path:
            return JsonResponse({"message": "the path must not contain NUL characters"}, status=400)
        response = self.get_response(request)
        if response.status_code < 400 or response.get("Content-Type", "").startswith("application/json"):
            return response
        status = response.status_code
        message = _WORDS.get(status, "the request could not be handled")
        if status == 405:
            allowed = response.get("Allow", "")
            message = f"{request.method} is not allowed on {request.path}" + (f"; use {allowed}" if allowed else "")
        elif status == 404:
            message = f"no such endpoint: {request.method} {request.path}"
        replacement = JsonResponse({"message": message}, status=status)
        if response.has_header("Allow"):
            replacement["Allow"] = response["Allow"]
        return replacement
