"""What the API's OpenAPI document says: the operations it takes and the query parameters
it reads. The owner gate (crows_site/security.py) refuses a state change only on a path
the API takes, and ApiErrorsAsJson (crows_site/middleware.py) refuses a NUL only in a
parameter the API reads; both read it here, built once from the one NinjaAPI."""

from __future__ import annotations

import functools
import re
from typing import Any

from crows_site.api import api


@functools.cache
def _openapi_paths() -> dict[str, Any]:
    """The API's OpenAPI document's paths, built once (about 0.1 s)."""
    return api.get_openapi_schema()["paths"]


@functools.cache
def _api_operations() -> tuple[tuple[re.Pattern[str], frozenset[str]], ...]:
    """Every /api/ path the OpenAPI document describes, as a pattern, with its methods."""
    routes = []
    for template, operations in _openapi_paths().items():
        # A `{param}` is one path segment, as Django's default path converter takes it.
        pattern = "[^/]+".join(re.escape(part) for part in re.split(r"\{[^}/]*\}", template))
        routes.append((re.compile(pattern + r"\Z"), frozenset(method.upper() for method in operations)))
    return tuple(routes)


@functools.cache
def documented_query_names() -> frozenset[str]:
    """Every query parameter some operation of the API reads."""
    return frozenset(
        parameter["name"]
        for operations in _openapi_paths().values()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
        if parameter.get("in") == "query"
    )


def api_takes(method: str, path: str) -> bool:
    """Whether the API has an operation for `method` on `path`."""
    return any(method in methods and pattern.match(path) for pattern, methods in _api_operations())
