"""Ordering without a global lock, on PostgreSQL: writers never wait for each other, ids
may commit out of order, and streams still lose, double and reorder nothing, because they
trust ids only up to the final horizon (docs/STREAM.md)."""

from __future__ import annotations

import json
import random
import threading
import time

import psycopg
import pytest

from tests.support.server import LiveServer
from tests.support.services import fresh_postgres_database, missing_postgres
from tests.support.sse import SSEClient

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

WRITERS = ["owner", "Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook", "Quill"]


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory):
    with fresh_postgres_database() as url:
        env = {
            "DATABASE_URL": url,
            "CROWS_NEST_POST_RATE_PER_MIN": "1000000",
            "CROWS_EXCHANGES_PER_TURN": "0",
        }
        data = tmp_path_factory.mktemp("pg-ordering")
        server = LiveServer(data, env=env).start()
        server.database_url = url
        try:
            yield server
        finally:
            server.stop()


def _post(server, n: int, author: str) -> None:
    for i in range(n):
        r = server.post("/api/nests/todo/messages", {"author": author, "text": f"note {i} from {author}"})
        assert r.status_code == 201, r.text


def _stored(server, after: int, query: str = "") -> list[int]:
    with psycopg.connect(server.database_url) as conn:
        where = " AND nest_key = 'todo'" if query else ""
        rows = conn.execute(f"SELECT id FROM flock_event WHERE id > %s{where} ORDER BY id", [after])
        return [r[0] for r in rows]


def test_eight_concurrent_writers_and_reconnecting_clients_lose_and_double_nothing(pg_server):
    server = pg_server
    first_cursor = server.get("/api/state").json()["last_event_id"]
    writers_done = threading.Event()
    received: dict[int, list[int]] = {}
    urls = [f"{server.url}/api/events"] * 3 + [f"{server.url}/api/events?nest_id=todo"] * 2

    def reader(n: int) -> None:
        rng = random.Random(n)
        got: list[int] = []
        cursor = first_cursor
        while True:
            client = SSEClient(urls[n], last_event_id=cursor)
            deadline = time.monotonic() + rng.uniform(0.05, 0.5)
            try:
                while time.monotonic() < deadline or writers_done.is_set():
                    try:
                        frame = client.frames.get(timeout=0.1 if not writers_done.is_set() else 2.0)
                    except Exception:
                        if writers_done.is_set():
                            received[n] = got
                            return
                        continue
                    if frame.id is not None:
                        got.append(frame.id)
                        cursor = frame.id
            finally:
                client.close()

    writers = [threading.Thread(target=_post, args=(server, 25, a)) for a in WRITERS]
    readers = [threading.Thread(target=reader, args=(n,)) for n in range(len(urls))]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    writers_done.set()
    for t in readers:
        t.join(timeout=90)

    everything = _stored(server, first_cursor)
    in_nest = _stored(server, first_cursor, "nest")
    assert len(everything) >= 200 and len(in_nest) == 200
    for n in range(len(urls)):
        expected = in_nest if "nest_id" in urls[n] else everything
        assert received[n] == expected, f"client {n} saw a gap, a duplicate or a reordering"


def test_a_later_id_waits_for_an_earlier_transaction_still_open(pg_server):
    """A writer holds an early id in an open transaction; an event committed after it with a
    later id is not sent until the early one commits, and then both arrive, in id order."""
    server = pg_server
    start = server.get("/api/state").json()["last_event_id"]
    client = SSEClient(f"{server.url}/api/events", last_event_id=start)
    slow = psycopg.connect(server.database_url)
    try:
        # What flock.events.emit does, by hand, leaving the transaction open.
        seq = slow.execute("SELECT pg_get_serial_sequence('flock_event', 'id')").fetchone()[0]
        slow.execute(
            f"SELECT pg_advisory_xact_lock_shared({1 << 48} + last_value"
            f" + CASE WHEN is_called THEN 1 ELSE 0 END) FROM {seq}"
        )
        early = slow.execute(
            "INSERT INTO flock_event (name, list_key, nest_key, payload, created_at)"
            " VALUES ('nest.message', '', 'todo', %s, now()) RETURNING id",
            [json.dumps({"nest_id": "todo", "text": "the slow one", "ts": "2026-01-01T00:00:00.000Z"})],
        ).fetchone()[0]
        _post(server, 1, "owner")
        assert server.get("/api/state").json()["last_event_id"] < early
        assert [f.id for f in client.drain(quiet=1.5) if f.id is not None] == []
        slow.commit()
        frames = [f for f in client.events(2, timeout=10)]
        assert [f.id for f in frames] == sorted(f.id for f in frames)
        assert frames[0].id == early and frames[0].data["text"] == "the slow one"
        assert frames[1].data["text"] == "note 0 from owner"
    finally:
        slow.close()
        client.close()


def test_a_rolled_back_id_does_not_hold_the_stream_back(pg_server):
    server = pg_server
    start = server.get("/api/state").json()["last_event_id"]
    client = SSEClient(f"{server.url}/api/events", last_event_id=start)
    try:
        with psycopg.connect(server.database_url) as conn:
            conn.execute(
                "INSERT INTO flock_event (name, list_key, nest_key, payload, created_at)"
                " VALUES ('nest.message', '', 'todo', '{}', now())"
            )
            conn.rollback()
        _post(server, 1, "owner")
        (frame,) = client.events(1, timeout=10)
        assert frame.data["text"] == "note 0 from owner"
    finally:
        client.close()
