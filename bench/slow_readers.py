"""Slow-reader bench: what clients that open the stream and never read cost the server.

    .venv/bin/python bench/slow_readers.py [--clients 60] [--waves 1] [--events 5000]
                                           [--text-bytes 1800] [--max-buffer-kb 1024] [--json out.json]

One daphne (`crows_site.asgi`) on 127.0.0.1 with its own migrated SQLite copy holding
`--events` nest.message events of about `--text-bytes` each (a few go through the real
action, the rest are copied from them in SQL, as bench/stream.py does). Then:
1. fast-client latency alone: 10 streams on `?nest_id=todo` that read everything, 30 owner
   POSTs, the time from just before each POST to every fast client seeing its text;
2. `--clients` clients open `/api/events?nest_id=todo&since=0` and never read a byte
   (their sockets keep the kernel's default buffers); the server's RSS is sampled while
   they sit, and the same 30-POST latency round runs beside them;
3. the slow clients close (those the server has not closed already), and RSS is read again
   3 s and 20 s later. `--waves N` repeats 2 and 3 N times (one round of POSTs each).
RSS is also read as the server starts, before the first posts load Jev's models.
Targets (docs/PERFORMANCE.md, "Slow readers"): growth at most 100 MiB, RSS back within
50 MiB of where it stood before the slow clients, fast-client latency unchanged. Not part of the test suite; loopback
only; every wait is bounded; the server is stopped on exit or error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stream_clients import HOST, Poster, Watch, close_all, get_request, open_many, percentile  # noqa: E402
from _stream_servers import CROWS_APP, PYTHON, ROOT, Server, env_for, migrate  # noqa: E402

FAST_CLIENTS = 10
ROUNDS = 30
AFTER_LONG_S = 20
SUB_PATH = "/api/events?nest_id=todo"
SLOW_PATH = "/api/events?nest_id=todo&since=0"

FILL = """
from django.db import connection, transaction
from flock.models import Event
from nests.actions import post_message

SEED, TOTAL = 20, {total}
for i in range(1, SEED + 1):
    post_message("todo", author="owner", text=(f"slow reader note {{i}} " + "caw " * {words})[:2000])
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
n = Event.objects.filter(nest_key="todo").count()
size = sum(len(str(p)) for p in Event.objects.filter(nest_key="todo").values_list("payload", flat=True)[:200])
print("filled", n, size // 200)
"""


class TunedServer(Server):
    """The bench's server, with this run's stream limit."""

    def __init__(self, *args: object, max_buffer_kb: int, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.max_buffer_kb = max_buffer_kb

    def launch(self) -> Server:
        env = env_for(self.data_dir)
        env["CROWS_STREAM_MAX_BUFFER_KB"] = str(self.max_buffer_kb)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(Path(PYTHON).with_name("daphne")), "-b", HOST, "-p", str(self.port), self.app],
            cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        return self


class NonReader(asyncio.Protocol):
    """Sends its request, then stops reading from the socket for good."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.transport: asyncio.Transport | None = None
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.transport.write(self.request)
        self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)

    def closed_by_server(self) -> bool:
        # A paused asyncio transport never notices the server's reset; the kernel does.
        sock = self.transport.get_extra_info("socket") if self.transport else None
        if sock is None:
            return self.lost.done()
        state = struct.unpack("B", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[:1])[0]
        return state != 1  # TCP_ESTABLISHED


async def latency_round(port: int, watch: Watch, n_clients: int, tag: str) -> list[float]:
    poster = Poster(port)
    out: list[float] = []
    try:
        for i in range(ROUNDS):
            marker = f"{tag}-{i}-{time.time_ns()}"
            watch.arm(marker.encode(), n_clients)
            start = time.perf_counter()
            body = json.dumps({"author": "owner", "text": marker}).encode()
            status = await poster.post("/api/nests/todo/messages", body)
            if status != 201:
                raise RuntimeError(f"POST answered {status}")
            assert watch.done is not None
            await asyncio.wait_for(watch.done, 30)
            out.extend((t - start) * 1000 for t in watch.disarm().values())
            await asyncio.sleep(0.05)
    finally:
        poster.close()
    return out


async def run(server: Server, clients: int, waves: int) -> dict[str, object]:
    loop = asyncio.get_running_loop()
    # The server as it starts, before any post: the first posts load Jev's models, which
    # stay (docs/JEV.md), so "before the slow clients" is measured after them.
    rss_fresh = server.rss_kib()
    watch = Watch()
    fast, errors = await open_many(server.port, SUB_PATH, FAST_CLIENTS, watch=watch)
    if errors:
        raise RuntimeError(f"fast clients failed: {errors[:3]}")
    # One round first: the first messages load Jev's models, which is start-up, not load.
    await latency_round(server.port, watch, FAST_CLIENTS, "warm")
    await asyncio.sleep(1)
    rss_start = server.rss_kib()
    alone = await latency_round(server.port, watch, FAST_CLIENTS, "alone")

    request = get_request(server.port, SLOW_PATH)
    beside: list[float] = []
    rounds: list[dict[str, float]] = []
    closed_by_server = 0
    # Each wave: `clients` non-readers arrive, sit, and leave. Several waves show whether
    # the high-water mark holds or ratchets up with each.
    for wave in range(waves):
        slow: list[NonReader] = []
        for _ in range(clients):
            _, proto = await loop.create_connection(lambda: NonReader(request), HOST, server.port)
            slow.append(proto)
        peak = server.rss_kib()
        sample_until = time.monotonic() + 8
        while time.monotonic() < sample_until:
            peak = max(peak, server.rss_kib())
            await asyncio.sleep(0.1)
        beside += await latency_round(server.port, watch, FAST_CLIENTS, f"beside{wave}")
        peak = max(peak, server.rss_kib())
        closed_by_server += sum(1 for s in slow if s.closed_by_server())
        for s in slow:
            if s.transport is not None:
                s.transport.abort()
        await asyncio.sleep(3)
        rss_after = server.rss_kib()
        await asyncio.sleep(AFTER_LONG_S - 3)
        rss_after_long = server.rss_kib()
        rounds.append({
            "rss_peak_mib": round(peak / 1024, 1),
            "rss_after_close_mib": round(rss_after / 1024, 1),
            f"rss_{AFTER_LONG_S}s_after_close_mib": round(rss_after_long / 1024, 1),
        })
    await close_all(fast)

    def summary(values: list[float]) -> dict[str, float]:
        return {"p50_ms": round(percentile(values, 50), 1), "p99_ms": round(percentile(values, 99), 1)}

    last = rounds[-1]
    highest = max(r["rss_peak_mib"] for r in rounds)
    return {
        "slow_clients": clients,
        "waves": waves,
        "closed_by_server": closed_by_server,
        "rss_fresh_mib": round(rss_fresh / 1024, 1),
        "rss_start_mib": round(rss_start / 1024, 1),
        "rss_peak_mib": highest,
        "growth_mib": round(highest - rss_start / 1024, 1),
        "rss_after_close_mib": last["rss_after_close_mib"],
        "after_vs_start": round(last["rss_after_close_mib"] * 1024 / rss_start, 3),
        f"rss_{AFTER_LONG_S}s_after_close_mib": last[f"rss_{AFTER_LONG_S}s_after_close_mib"],
        "back_within_mib": round(last[f"rss_{AFTER_LONG_S}s_after_close_mib"] - rss_start / 1024, 1),
        "each_wave": rounds,
        "fast_alone": summary(alone),
        "fast_beside_slow": summary(beside),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=60)
    parser.add_argument("--waves", type=int, default=1)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--text-bytes", type=int, default=1800)
    parser.add_argument("--max-buffer-kb", type=int, default=1024)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="crows-slow-"))
    server: Server | None = None
    try:
        data = tmp / "db"
        migrate(data)
        filled = subprocess.run(
            [PYTHON, "manage.py", "shell", "-c", FILL.format(total=args.events, words=max(1, args.text_bytes // 4))],
            cwd=ROOT, env=env_for(data), capture_output=True, text=True, timeout=300,
        )
        if filled.returncode != 0 or "filled" not in filled.stdout:
            raise RuntimeError(filled.stderr[-3000:])
        words = filled.stdout.split()
        count, payload = int(words[words.index("filled") + 1]), int(words[words.index("filled") + 2])
        server = TunedServer("crows", CROWS_APP, data, max_buffer_kb=args.max_buffer_kb).start()
        server.settle()
        result = asyncio.run(run(server, args.clients, args.waves))
        result.update(events=count, payload_bytes=payload, max_buffer_kb=args.max_buffer_kb)
        print(json.dumps(result, indent=2))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
