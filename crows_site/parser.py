"""The API's JSON body parser: json.loads, then refuse strings no database can store."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.parser import Parser

from flock.errors import BadInput


def too_large() -> str:
    """A 413's words, with the limit (CROWS_MAX_BODY_BYTES) the body went over."""
    return f"the request body is too large: at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes"


def _check(value: Any, where: str) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise BadInput(f"{where} must not contain NUL characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BadInput(f"{where} must be valid Unicode (a lone surrogate such as \\ud800 is not)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, "a field name")
            _check(item, str(key) if where == "the body" else f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            _check(item, where)


class StrictJsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        data = json.loads(request.body)
        _check(data, "the body")
        return data
