"""Scale-out: two daphne processes on one PostgreSQL database and Redis. An event posted
through one reaches the subscribers of the other, and the stream stays gap-free."""

from __future__ import annotations

import threading

import pytest

from tests.support.server import LiveServer
from tests.support.services import fresh_postgres_database, missing_services
from tests.support.sse import SSEClient

# Servers of one Redis hear each other's doorbells: tests on the shared Redis run one at a
# time (one pytest-xdist worker).
pytestmark = [pytest.mark.scaleout, pytest.mark.live, pytest.mark.xdist_group("shared-redis")]

_why = missing_services()
if _why:
    pytest.skip(_why, allow_module_level=True)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    with fresh_postgres_database() as url:
        env = {
            "DATABASE_URL": url,
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "CROWS_NEST_POST_RATE_PER_MIN": "100000",
            "CROWS_EXCHANGES_PER_TURN": "0",
            # Slow the database poll right down, so only Redis can deliver in time.
            "CROWS_STREAM_POLL_S": "60",
        }
        data = tmp_path_factory.mktemp("scaleout")
        # One server runs the embedded worker; the other is a pure web process.
        a = LiveServer(data, env={**env, "CROWS_EMBEDDED_WORKER": "1"}).start()
        b = LiveServer(data, env={**env, "CROWS_EMBEDDED_WORKER": "0"}).start()
        try:
            yield a, b
        finally:
            a.stop()
            b.stop()


def test_an_event_posted_through_one_server_reaches_subscribers_of_the_other(pair):
    a, b = pair
    last = b.get("/api/state").json()["last_event_id"]
    on_b = SSEClient(f"{b.url}/api/events?nest_id=todo&since={last}")
    try:
        r = a.post("/api/nests/todo/messages", {"author": "owner", "text": "hello from server a"})
        assert r.status_code == 201, r.text
        frame = on_b.wait_for(lambda f: f.data.get("text") == "hello from server a", timeout=5)
        assert frame.event == "nest.message"
    finally:
        on_b.close()


def test_concurrent_writers_on_both_servers_reach_every_client_in_order(pair):
    a, b = pair
    start = a.get("/api/state").json()["last_event_id"]
    clients = [SSEClient(f"{s.url}/api/events", last_event_id=start) for s in (a, b, a, b)]

    def write(server, author):
        for i in range(25):
            r = server.post("/api/nests/todo/messages", {"author": author, "text": f"{author} {i}"})
            assert r.status_code == 201, r.text

    writers = [
        threading.Thread(target=write, args=(s, author))
        for s, author in ((a, "owner"), (b, "Hugin"), (a, "Munin"), (b, "Pepper"))
    ]
    try:
        for t in writers:
            t.start()
        for t in writers:
            t.join()
        expected_count = 100
        got = [[f.id for f in c.events(expected_count, timeout=20)] for c in clients]
        replay = SSEClient(f"{b.url}/api/events?since={start}")
        stored = [f.id for f in replay.events(expected_count, timeout=20)]
        replay.close()
        assert len(set(stored)) == expected_count and stored == sorted(stored)
        for ids in got:
            assert ids == stored
    finally:
        for c in clients:
            c.close()
