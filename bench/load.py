"""Open-loop load: many SSE subscribers and a steady post rate for a fixed time.

    .venv/bin/python bench/load.py [--modes embedded,scaleout] [--subscribers 1000]
        [--rate 2] [--seconds 30] [--json out.json]

For each mode it starts the processes (bench/lists.py's shapes: `embedded` is one daphne
with the embedded worker on SQLite; `scaleout` is two daphne servers + two db_workers on a
fresh PostgreSQL database and Redis), opens --subscribers streams of
`/api/events?nest_id=todo` (spread over the servers in turn), then POSTs owner messages
to the nest at --rate per second for --seconds, open loop: each POST is sent at its
scheduled moment whatever the earlier ones are doing (posts go to the servers in turn).

Reports, per mode: delivered/expected events (expected = subscribers x posts answered 201;
a duplicate counts as an error, not a delivery), p50/p99 delivery latency (arrival at a
subscriber minus the post's scheduled moment), POST errors and late starts, streams lost,
and the servers' (and workers') memory before and after. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from _stream_clients import HOST, Poster, get_request, percentile  # noqa: E402
from lists import start_shape  # noqa: E402

MARK = re.compile(rb"load~([0-9a-f]{6})~(\d+)~")


class Subscriber(asyncio.Protocol):
    """Finds each post's marker in the bytes it reads and records when it arrived."""

    def __init__(self, run: str, request: bytes) -> None:
        self.run = run.encode()
        self.request = request
        self.dupes: list[int] = []
        self.seen: set[int] = set()
        self.deliveries: list[tuple[int, float]] = []
        self.tail = b""
        self.ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.lost = False
        self.transport: asyncio.Transport | None = None
        self.head_done = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if not self.head_done:
            if not self.ready.done():
                try:
                    self.ready.set_result(int(data.split(b" ", 2)[1]))
                except Exception:
                    self.ready.set_result(0)
            self.head_done = True
        chunk = self.tail + data
        for m in MARK.finditer(chunk):
            if m.group(1) != self.run:
                continue
            n = int(m.group(2))
            if n in self.seen:
                if m.start() >= len(self.tail):
                    self.dupes.append(n)
                continue
            self.seen.add(n)
            self.deliveries.append((n, now))
        self.tail = chunk[-64:]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self.ready.done():
            self.ready.set_result(0)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.abort()


async def run_load(ports: list[int], *, subscribers: int, rate: float, seconds: float) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    run = uuid.uuid4().hex[:6]
    subs: list[Subscriber] = []
    open_errors = 0
    sem = asyncio.Semaphore(48)

    async def open_one(i: int) -> None:
        nonlocal open_errors
        port = ports[i % len(ports)]
        async with sem:
            try:
                _, sub = await asyncio.wait_for(loop.create_connection(
                    lambda: Subscriber(run, get_request(port, "/api/events?nest_id=todo")), HOST, port), 60)
                status = await asyncio.wait_for(sub.ready, 60)
                if status != 200:
                    open_errors += 1
                    sub.close()
                    return
                subs.append(sub)
            except Exception:
                open_errors += 1

    t_open = time.perf_counter()
    await asyncio.gather(*(open_one(i) for i in range(subscribers)))
    open_s = time.perf_counter() - t_open
    await asyncio.sleep(2.0)  # let every stream finish its replay of the nest

    posters: asyncio.Queue[Poster] = asyncio.Queue()
    for k in range(32):
        posters.put_nowait(Poster(ports[k % len(ports)]))
    scheduled: dict[int, float] = {}
    answered: list[int] = []
    post_errors: list[str] = []
    late: list[float] = []
    total = int(rate * seconds)

    async def post(n: int, at: float) -> None:
        delay = at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        poster = await posters.get()
        start = time.perf_counter()
        late.append(start - at)
        scheduled[n] = at
        body = json.dumps({"author": "owner", "text": f"load~{run}~{n}~ steady traffic"}).encode()
        try:
            status = await poster.post("/api/nests/todo/messages", body, timeout=60)
            if status == 201:
                answered.append(n)
            else:
                post_errors.append(f"HTTP {status}")
        except Exception as exc:
            poster.close()
            post_errors.append(type(exc).__name__)
        finally:
            posters.put_nowait(poster)

    t0 = time.perf_counter() + 0.5
    await asyncio.gather(*(post(n, t0 + n / rate) for n in range(total)))
    # Stragglers: wait until every subscriber has every answered post, or 15 s.
    want = set(answered)
    deadline = time.perf_counter() + 15
    while time.perf_counter() < deadline:
        if all(want <= sub.seen for sub in subs):
            break
        await asyncio.sleep(0.2)
    latencies = [
        (when - scheduled[n]) * 1000 for sub in subs for n, when in sub.deliveries if n in want
    ]
    delivered = sum(len(want & sub.seen) for sub in subs)
    expected = len(want) * len(subs)
    dupes = sum(len(sub.dupes) for sub in subs)
    lost_streams = sum(1 for sub in subs if sub.lost)
    for sub in subs:
        sub.close()
    while not posters.empty():
        posters.get_nowait().close()
    return {
        "subscribers_open": len(subs),
        "open_errors": open_errors,
        "open_s": open_s,
        "posts_scheduled": total,
        "posts_answered": len(answered),
        "post_errors": post_errors,
        "late_start_p99_ms": percentile([x * 1000 for x in late], 99) if late else 0.0,
        "delivered": delivered,
        "expected": expected,
        "delivered_ratio": delivered / expected if expected else 0.0,
        "duplicates": dupes,
        "streams_lost": lost_streams,
        "latency_p50_ms": percentile(latencies, 50) if latencies else float("nan"),
        "latency_p99_ms": percentile(latencies, 99) if latencies else float("nan"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="embedded,scaleout")
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=2.0, help="posts per second")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"embedded", "scaleout"}:
        parser.error("--modes is a comma-separated subset of embedded,scaleout")
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.subscribers * 2 + 256)), hard))

    work = Path(tempfile.mkdtemp(prefix="crows-bench-load-"))
    results: dict[str, Any] = {}
    extra = {"CROWS_NEST_POST_RATE_PER_MIN": "1000000", "CROWS_EXCHANGES_PER_TURN": "0"}
    try:
        for mode in modes:
            print(f"[{mode}] starting ...", flush=True)
            shape = start_shape("sqlite" if mode == "embedded" else "scaleout", work, extra)
            try:
                rss_before = shape.rss_mib()
                ports = [s.port for s in shape.servers]
                result = asyncio.run(run_load(ports, subscribers=args.subscribers, rate=args.rate,
                                              seconds=args.seconds))
                result["rss_mib_before"] = rss_before
                result["rss_mib_after"] = shape.rss_mib()
                result["load_average_after"] = os.getloadavg()
            finally:
                shape.stop()
            results[mode] = result
            print(f"[{mode}] delivered {result['delivered']}/{result['expected']} "
                  f"({result['delivered_ratio']:.2%}), p50 {result['latency_p50_ms']:.0f} ms, "
                  f"p99 {result['latency_p99_ms']:.0f} ms, post errors {len(result['post_errors'])}, "
                  f"duplicates {result['duplicates']}, streams lost {result['streams_lost']}, "
                  f"RSS {result['rss_mib_before']:.0f} -> {result['rss_mib_after']:.0f} MiB", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"{args.subscribers} subscribers, {args.rate}/s for {args.seconds:.0f} s; {machine}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "args": vars(args) | {"json": str(args.json)},
                                         "results": results}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
