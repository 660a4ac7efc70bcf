"""Twisted's form parsing, switched off for daphne's requests.

Twisted's `Request` parses every POST body whose Content-Type is a form (urlencoded or
multipart) into `request.args`, and first parses the Content-Type header itself with the
standard library's e-mail header machinery, on every POST. daphne never reads
`request.args`: it hands the raw body to the ASGI application, which parses what it
accepts. So the parse was wasted work on the event loop (py-spy: 4 % of a nest POST's
CPU, docs/PERFORMANCE.md), and worse, a multipart body Twisted could not parse (no
boundary) was answered by Twisted itself with a bare 400 and a dropped connection, before
the API could answer with its `{"message"}`.

Twisted has a switch for this (`parsePOSTFormSubmission`, a constructor argument), but
daphne builds its `WebRequest`s without passing it; so the attribute is fixed to False on
daphne's class, where Twisted reads it.
"""

from __future__ import annotations

from typing import Any


class _Off:
    """A data descriptor that reads False whatever `Request.__init__` assigns."""

    def __get__(self, instance: Any, owner: Any = None) -> bool:
        return False

    def __set__(self, instance: Any, value: Any) -> None:
        pass


def stop_form_parsing() -> None:
    from daphne.http_protocol import WebRequest

    WebRequest._parsePOSTFormSubmission = _Off()


# Status lines Twisted has no phrase for, which it would send as "Unknown Status"; the
# API answers 429 to a poster who is cooling down (docs/LISTS.md, 429). RFC 6585.
MISSING_PHRASES = {429: b"Too Many Requests"}


def name_every_status() -> None:
    from twisted.web import http

    for status, phrase in MISSING_PHRASES.items():
        http.RESPONSES.setdefault(status, phrase)
