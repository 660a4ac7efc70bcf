"""A stream asked for while the database is not answering gets the API's 503, with
Retry-After and a {"message"}, not a bare 500; a database error that is a bug does not
pass for an outage."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.testing import ApplicationCommunicator
from django.db.utils import OperationalError

from flock.stream import consumer
from tests.support.asgi import http_scope

SCOPE = http_scope("/api/events", b"nest_id=todo")


async def _ask() -> tuple[int, dict[bytes, bytes], dict]:
    app = ApplicationCommunicator(consumer.EventStreamConsumer.as_asgi(), dict(SCOPE))
    await app.send_input({"type": "http.request", "body": b""})
    start = await app.receive_output(5)
    body = await app.receive_output(5)
    await app.wait(5)
    return int(start["status"]), dict(start["headers"]), json.loads(body["body"])


def test_a_keyed_stream_while_the_database_is_locked_is_a_503_with_retry_after(monkeypatch):
    def locked(param: str, value: str) -> bool:
        raise OperationalError("database is locked")

    monkeypatch.setattr(consumer, "_check_exists", locked)
    status, headers, body = asyncio.run(_ask())
    assert status == 503
    assert headers[b"Retry-After"] == b"2"
    assert "database is not answering" in body["message"]


def test_a_database_error_that_is_a_bug_is_not_passed_off_as_an_outage(monkeypatch):
    def broken(param: str, value: str) -> bool:
        raise OperationalError("no such table: nests_nest")

    monkeypatch.setattr(consumer, "_check_exists", broken)
    with pytest.raises(OperationalError):
        asyncio.run(_ask())
