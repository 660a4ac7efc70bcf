"""Redis outages nobody notices: two servers on one PostgreSQL database and a Redis this
test starts on its own port, stops, and starts again.

- While Redis is down, a server still delivers its own events to its own subscribers at
  once (server A polls the database only once a minute here, so nothing else could), and
  the other server's subscribers get them from the database within its poll interval.
- When Redis returns, delivery goes back to pub/sub (again A could not have polled), and
  no client lost or doubled anything across the whole outage.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

import pytest

from tests.support.server import LiveServer, free_port
from tests.support.services import fresh_postgres_database, missing_postgres, reachable
from tests.support.sse import SSEClient

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if not _why and shutil.which("redis-server") is None:
    _why = "this test starts its own Redis and needs redis-server on PATH"
if _why:
    pytest.skip(_why, allow_module_level=True)


class OwnRedis:
    def __init__(self, port: int) -> None:
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> OwnRedis:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not reachable("127.0.0.1", self.port):
            if time.monotonic() > deadline:
                raise TimeoutError("redis-server did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def outage_pair(tmp_path):
    redis = OwnRedis(free_port()).start()
    with fresh_postgres_database() as url:
        env = {
            "DATABASE_URL": url,
            "REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
            "CROWS_NEST_POST_RATE_PER_MIN": "100000",
            "CROWS_EXCHANGES_PER_TURN": "0",
            "CROWS_EMBEDDED_WORKER": "0",
        }
        a = LiveServer(tmp_path, env={**env, "CROWS_STREAM_POLL_S": "60"}).start()
        b = LiveServer(tmp_path, env={**env, "CROWS_STREAM_POLL_S": "1"}).start()
        try:
            yield redis, a, b
        finally:
            a.stop()
            b.stop()
            redis.stop()


class Collector:
    """Every event frame one SSE client reads, kept in order."""

    def __init__(self, url: str, last_event_id: int) -> None:
        self.client = SSEClient(url, last_event_id=last_event_id)
        self.frames: list = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self.client.closed.is_set():
            try:
                frame = self.client.frames.get(timeout=0.2)
            except Exception:
                continue
            if frame.id is not None:
                with self._changed:
                    self.frames.append(frame)
                    self._changed.notify_all()

    def wait(self, done, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done(self.frames):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"got {[f.data.get('text') for f in self.frames]}")
                self._changed.wait(left)

    def has(self, text: str, timeout: float = 10) -> None:
        self.wait(lambda frames: any(f.data.get("text") == text for f in frames), timeout)

    def close(self) -> None:
        self.client.close()


def _say(server, text: str) -> None:
    r = server.post("/api/nests/todo/messages", {"author": "owner", "text": text})
    assert r.status_code == 201, r.text


def test_a_redis_outage_loses_nothing_and_delivery_returns_to_pub_sub(outage_pair):
    redis, a, b = outage_pair
    start = a.get("/api/state").json()["last_event_id"]
    on_a = Collector(f"{a.url}/api/events", start)
    on_b = Collector(f"{b.url}/api/events", start)
    try:
        _say(a, "before the outage")
        on_a.has("before the outage")
        on_b.has("before the outage")

        redis.stop()
        _say(a, "during the outage, from a")
        # A polls once a minute: only its own in-process delivery can bring this in time.
        on_a.has("during the outage, from a")
        # B has no doorbell for it: it reads it from the database within its poll interval.
        on_b.has("during the outage, from a")
        _say(b, "during the outage, from b")
        on_b.has("during the outage, from b")

        redis.start()
        # Each server's listener reconnects by itself: post through b until a hears one
        # (a polls once a minute, so only pub/sub can bring it).
        deadline = time.monotonic() + 30
        n = 0
        while True:
            n += 1
            _say(b, f"after the outage {n}")
            try:
                on_a.has(f"after the outage {n}", timeout=2)
                break
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise
        for k in range(6):
            _say(a if k % 2 else b, f"back on pub/sub {k}")
        for client in (on_a, on_b):
            client.has("back on pub/sub 5")
        last = b.get("/api/state").json()["last_event_id"]
        replay = SSEClient(f"{b.url}/api/events?since={start}")
        try:
            stored = [f.id for f in replay.events(1)]
            while stored[-1] < last:
                stored.extend(f.id for f in replay.events(1))
        finally:
            replay.close()
        for client in (on_a, on_b):
            client.wait(lambda frames: frames and frames[-1].id >= last)
            assert [f.id for f in client.frames] == stored, "a client lost, doubled or reordered an event"
    finally:
        on_a.close()
        on_b.close()
