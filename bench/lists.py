"""List pipeline benchmark: lists end to end beside a bare POST-to-event baseline, same run.

    .venv/bin/python bench/lists.py [--lists 20] [--items 10] [--concurrency 5] [--json out.json]

Starts one real daphne on 127.0.0.1 with the mock brain, on a freshly migrated SQLite copy
in a temp dir, with the whole flock trusted (`manage.py trust_seed`, so every verdict is
`auto`) and Jev warm. Then, from this process (which shares the cores with the server):

1. lists under load: posts --lists lists of --items items each (a fixed mix of solo, split
   and murder items), --concurrency at a time, and times each from just before its POST
   to its `list.finished` on the firehose. Reports lists per minute (first POST to last
   finish), p50/p99 latency, items answered and skipped (by reason), and tokens used.
2. one list at a time: --alone lists posted one after another, each after the previous
   finished: the latency of a list on an idle flock.
3. baseline: the same numbers of bare `POST /api/nests/todo/messages` at the same
   concurrency (crows not invoked), each timed from just before its POST to its
   `nest.message` on the same firehose: the spine's own POST-to-event round trip.

Prints each beside its baseline, with the ratio. Not part of the test suite; every server it starts is stopped
on exit, Ctrl+C or error.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.server import PYTHON, LiveServer, SqliteTemplate, base_env  # noqa: E402
from tests.support.sse import SSEClient  # noqa: E402

ITEMS = [
    "write a haiku about crows",  # solo
    "draft the launch email for the beta",  # solo
    "fix the login bug on Safari and update the docs and email the team",  # split
    "should we use postgres or sqlite?",  # murder
    "summarise last quarter's support tickets",  # solo
    "plan the team offsite for March",  # solo
    "research three vendors for error tracking and compare their prices",  # split or solo
    "which logo should we pick, the round one or the square one?",  # murder
    "write release notes for version 2.3",  # solo
    "clean up the sales spreadsheet",  # solo
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


class Firehose:
    """One firehose connection; records when each awaited key's event arrives."""

    def __init__(self, url: str) -> None:
        self.client = SSEClient(f"{url}/api/events")
        self.arrived: dict[str, float] = {}
        self.frames: list[Any] = []
        self.changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self.client.closed.is_set():
            try:
                frame = self.client.frames.get(timeout=0.5)
            except Exception:
                continue
            if frame.id is None:
                continue
            now = time.perf_counter()
            key = None
            if frame.event == "list.finished":
                key = frame.data["list_id"]
            elif frame.event == "nest.message":
                key = frame.data.get("text", "")
            with self.changed:
                if frame.data.get("list_id"):
                    self.frames.append(frame)
                if key is not None:
                    self.arrived.setdefault(key, now)
                    self.changed.notify_all()

    def wait_all(self, keys: set[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not keys <= set(self.arrived):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(keys - set(self.arrived))} of {len(keys)} never arrived")
                self.changed.wait(left)

    def close(self) -> None:
        self.client.close()


def start_server(work: Path) -> LiveServer:
    template = SqliteTemplate(work / "template-root")
    data_dir = template.fresh_dir("server")
    env = base_env(CROWS_DATA_DIR=str(data_dir))
    # Trust everyone, and train Jev once, before the server starts.
    subprocess.run(
        [PYTHON, "manage.py", "shell", "-c",
         "from django.core.management import call_command; call_command('trust_seed'); "
         "from flock.jev import warm; warm()"],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=600,
    )
    server = LiveServer(data_dir, env={
        "CROWS_LIST_RATE_PER_MIN": "1000000",
        "CROWS_NEST_POST_RATE_PER_MIN": "1000000",
        "CROWS_EXCHANGES_PER_TURN": "0",
    })
    return server.start(timeout=60)


def run_lists(server: LiveServer, hose: Firehose, *, lists: int, items: int, concurrency: int) -> dict[str, Any]:
    text_for = ["\n".join(f"- {ITEMS[(n + k) % len(ITEMS)]}" for k in range(items)) for n in range(lists)]
    started: dict[str, float] = {}

    def post(n: int) -> None:
        with httpx.Client(timeout=60) as client:
            t0 = time.perf_counter()
            r = client.post(f"{server.url}/api/lists", json={"text": text_for[n], "requester": f"bench-{n % 10}"})
            r.raise_for_status()
            started[r.json()["list_id"]] = t0

    first = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(post, range(lists)))
    hose.wait_all(set(started), timeout=60 + lists * items * 2)
    last = max(hose.arrived[k] for k in started)
    latencies = [(hose.arrived[k] - t0) * 1000 for k, t0 in started.items()]
    ours = [f for f in hose.frames if f.data["list_id"] in started]
    skipped = Counter(f.data["reason"] for f in ours if f.event == "item.skipped")
    answered = sum(1 for f in ours if f.event == "item.answered")
    tokens = [f.data["tokens_used"] for f in ours if f.event == "list.finished"]
    return {
        "lists": lists,
        "items_per_list": items,
        "concurrency": concurrency,
        "wall_s": last - first,
        "lists_per_min": lists / (last - first) * 60,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "items_answered": answered,
        "items_skipped": dict(skipped),
        "tokens_per_list_mean": statistics.mean(tokens),
        "banter_lines": sum(1 for f in ours if f.event == "crow.banter"),
    }


def run_baseline(server: LiveServer, hose: Firehose, *, count: int, concurrency: int) -> dict[str, Any]:
    started: dict[str, float] = {}
    stamp = uuid.uuid4().hex[:12]  # each round's texts are its own

    def post(n: int) -> None:
        text = f"bench {stamp} message {n}"
        with httpx.Client(timeout=60) as client:
            t0 = time.perf_counter()
            r = client.post(f"{server.url}/api/nests/todo/messages", json={"author": "owner", "text": text})
            r.raise_for_status()
            started[text] = t0

    first = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(post, range(count)))
    hose.wait_all(set(started), timeout=60)
    last = max(hose.arrived[k] for k in started)
    latencies = [(hose.arrived[k] - t0) * 1000 for k, t0 in started.items()]
    return {
        "posts": count,
        "concurrency": concurrency,
        "wall_s": last - first,
        "per_min": count / (last - first) * 60,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lists", type=int, default=20)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--alone", type=int, default=5, help="lists posted one at a time")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not 1 <= args.items <= 20:
        parser.error("--items must be 1-20 (a list holds at most 20)")

    work = Path(tempfile.mkdtemp(prefix="crows-bench-lists-"))
    server: LiveServer | None = None
    hose: Firehose | None = None
    try:
        print(f"starting daphne (mock brain, trusted flock) in {work} ...", flush=True)
        server = start_server(work)
        hose = Firehose(server.url)
        # One small list first, so the first measured one does not pay for loading Jev.
        warm = run_lists(server, hose, lists=1, items=1, concurrency=1)
        del warm
        lists = run_lists(server, hose, lists=args.lists, items=args.items, concurrency=args.concurrency)
        base = run_baseline(server, hose, count=args.lists, concurrency=args.concurrency)
        alone = [run_lists(server, hose, lists=1, items=args.items, concurrency=1) for _ in range(args.alone)]
        alone_base = [run_baseline(server, hose, count=1, concurrency=1) for _ in range(args.alone)]
    finally:
        if hose is not None:
            hose.close()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    alone_ms = [a["p50_ms"] for a in alone]
    alone_base_ms = [b["p50_ms"] for b in alone_base]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average": os.getloadavg(),
        "lists": lists,
        "baseline": base,
        "ratio": {
            "p50": lists["p50_ms"] / base["p50_ms"],
            "p99": lists["p99_ms"] / base["p99_ms"],
            "per_min": lists["lists_per_min"] / base["per_min"],
        },
        "alone": {
            "lists": len(alone),
            "p50_ms": percentile(alone_ms, 50),
            "p99_ms": percentile(alone_ms, 99),
            "baseline_p50_ms": percentile(alone_base_ms, 50),
            "baseline_p99_ms": percentile(alone_base_ms, 99),
        },
    }
    print()
    print(f"{'':34}{'lists':>12}{'baseline':>12}{'ratio':>10}")
    print(f"{'per minute (end to end)':34}{lists['lists_per_min']:>12.1f}{base['per_min']:>12.1f}"
          f"{result['ratio']['per_min']:>10.4f}")
    print(f"{'p50 POST -> last event (ms)':34}{lists['p50_ms']:>12.0f}{base['p50_ms']:>12.1f}"
          f"{result['ratio']['p50']:>10.0f}")
    print(f"{'p99 POST -> last event (ms)':34}{lists['p99_ms']:>12.0f}{base['p99_ms']:>12.1f}"
          f"{result['ratio']['p99']:>10.0f}")
    a = result["alone"]
    print(f"{'one list at a time, p50 (ms)':34}{a['p50_ms']:>12.0f}{a['baseline_p50_ms']:>12.1f}"
          f"{a['p50_ms'] / a['baseline_p50_ms']:>10.0f}")
    print(f"{'one list at a time, p99 (ms)':34}{a['p99_ms']:>12.0f}{a['baseline_p99_ms']:>12.1f}"
          f"{a['p99_ms'] / a['baseline_p99_ms']:>10.0f}")
    print()
    print(f"{lists['lists']} lists x {lists['items_per_list']} items, {lists['concurrency']} posting at once, "
          f"in {lists['wall_s']:.1f} s: {lists['items_answered']} items answered, skipped {lists['items_skipped'] or 'none'}, "
          f"{lists['banter_lines']} banter lines, {lists['tokens_per_list_mean']:.0f} tokens per list on average.")
    print(f"baseline: {base['posts']} bare nest-message POSTs, each timed to its nest.message on the firehose.")
    print(f"{result['machine']}; load average after the run {result['load_average'][0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
