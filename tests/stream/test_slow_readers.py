"""Slow readers (docs/STREAM.md): a client that stops reading is closed once it is more
than CROWS_STREAM_MAX_BUFFER_KB behind, and reconnecting with Last-Event-ID loses nothing.
No timing is asserted; every wait is bounded."""

from __future__ import annotations

import socket
import struct
import subprocess
import time

import pytest

from tests.support.server import PYTHON, ROOT
from tests.support.sse import SSEClient

pytestmark = pytest.mark.live

EVENTS = 3000

# Post a few long owner messages through the action, then copy them in one statement:
# thousands of nest.message rows of about 2 KB each, several MB of replay.
FILL = """
from django.db import connection, transaction
from flock.models import Event
from nests.actions import post_message

SEED, TOTAL = 20, {total}
for i in range(1, SEED + 1):
    post_message("todo", author="owner", text=f"long note {{i}} " + "caw " * 450)
table = Event._meta.db_table
with transaction.atomic(), connection.cursor() as cursor:
    cursor.execute(
        "WITH RECURSIVE k(n) AS (SELECT %s UNION ALL SELECT n + 1 FROM k WHERE n < %s), "
        "seed AS (SELECT name, list_key, nest_key, payload, created_at, "
        "  ROW_NUMBER() OVER (ORDER BY id) - 1 AS r FROM " + table + " WHERE nest_key = 'todo') "
        "INSERT INTO " + table + " (name, list_key, nest_key, payload, created_at) "
        "SELECT seed.name, seed.list_key, seed.nest_key, "
        "  json_set(seed.payload, '$.msg_id', 'todo-' || k.n), seed.created_at "
        "FROM k JOIN seed ON seed.r = (k.n - 1) %% %s ORDER BY k.n",
        [SEED + 1, TOTAL, SEED],
    )
print("ids", *Event.objects.filter(nest_key="todo").order_by("id").values_list("id", flat=True))
"""

TCP_ESTABLISHED = 1


def tcp_state(sock: socket.socket) -> int:
    return struct.unpack("B", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[:1])[0]


def frame_ids(raw: bytes) -> list[int]:
    """The ids of the complete SSE frames in a raw HTTP/1.0 response."""
    body = raw.partition(b"\r\n\r\n")[2]
    ids = []
    for frame in body.split(b"\n\n")[:-1]:
        for line in frame.split(b"\n"):
            if line.startswith(b"id: "):
                ids.append(int(line[4:]))
    return ids


@pytest.fixture
def server(live_server_factory):
    return live_server_factory(
        env={"CROWS_STREAM_MAX_BUFFER_KB": "16", "CROWS_NEST_POST_RATE_PER_MIN": "100000",
             "CROWS_EXCHANGES_PER_TURN": "0", "CROWS_EMBEDDED_WORKER": "0"}
    )


def test_a_client_that_stops_reading_is_closed_and_reconnecting_loses_nothing(server):
    filled = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", FILL.format(total=EVENTS)],
        cwd=ROOT, env=server.env, capture_output=True, text=True, timeout=240,
    )
    assert filled.returncode == 0, filled.stderr[-2000:]
    stored = [int(x) for x in filled.stdout.split("ids", 1)[1].split()]
    assert len(stored) == EVENTS
    server.start()

    sock = socket.socket()
    # A small receive window, so the kernel cannot swallow the whole replay for us.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(
        f"GET /api/events?nest_id=todo&since=0 HTTP/1.0\r\nHost: 127.0.0.1:{server.port}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    # Read nothing until the server gives up on us (bounded wait, not a timing claim).
    deadline = time.monotonic() + 120
    while tcp_state(sock) == TCP_ESTABLISHED and time.monotonic() < deadline:
        time.sleep(0.2)
    assert tcp_state(sock) != TCP_ESTABLISHED, "the server never closed a client that does not read"

    raw = bytearray()
    sock.settimeout(10)
    try:
        while chunk := sock.recv(65536):
            raw += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    sock.close()
    first = frame_ids(bytes(raw))
    assert first == stored[: len(first)]
    assert len(first) < EVENTS, "the client got everything before being closed: the test proves nothing"

    client = SSEClient(
        f"{server.url}/api/events?nest_id=todo&since=0", last_event_id=first[-1] if first else 0
    )
    try:
        rest: list[int] = []
        deadline = time.monotonic() + 120
        while (not rest or rest[-1] < stored[-1]) and time.monotonic() < deadline:
            rest.extend(f.id for f in client.drain(quiet=1.0) if f.id is not None)
    finally:
        client.close()
    assert first + rest == stored

    # The server is healthy afterwards, and counts no stream left open.
    state = server.get("/api/state").json()
    assert state["streams_open"] == 0
