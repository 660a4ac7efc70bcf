"""List pipeline benchmark: lists end to end beside a bare POST-to-event baseline, same run,
on SQLite, on PostgreSQL, and in the scale-out shape (2 servers + 2 db_workers).

    .venv/bin/python bench/lists.py [--modes sqlite,postgres,scaleout] [--latency-ms 200]
        [--lists 20] [--items 10] [--concurrency 5] [--alone 3] [--threads 8]
        [--json out.json] [--keep]

Each mode starts its own processes on 127.0.0.1 with the mock brain (answering after
--latency-ms, standing in for a model), a freshly migrated database, the whole flock
trusted (`manage.py trust_seed --all`, so every verdict is `auto`) and Jev warm:

- sqlite: one daphne with the embedded worker, SQLite WAL;
- postgres: the same on a fresh PostgreSQL database (127.0.0.1:5432, CROWS_TEST_PG_ADMIN);
- scaleout: two daphne servers (embedded worker off) and two `manage.py db_worker`s on a
  fresh PostgreSQL database and Redis (127.0.0.1:6379); lists are posted to the servers in
  turn and watched on the first one's firehose.

Every process runs CROWS_WORKER_THREADS=--threads worker threads; CROWS_MAX_IN_FLIGHT is raised to
--max-in-flight (default 32) in every mode, so the flock-wide flight cap does not hide
what the modes can do. Then, from this process (which shares the cores with the servers):

1. lists under load: posts --lists lists of --items items each (a fixed mix of solo, split
   and murder items), --concurrency at a time, and times each from just before its POST
   to its `list.finished` on the firehose. Reports lists per minute (first POST to last
   finish), p50/p99 latency, items answered and skipped (by reason), and tokens used;
   the app's CPU per list (user + system of each of its processes, from /proc, not
   PostgreSQL's or Redis's) and how busy the whole machine was meanwhile; and where the
   workers' time went (from the task table: tasks run, busy seconds against threads x
   wall time, queue wait and run time per task, busy seconds by task).
2. one list at a time (--alone, in every mode of --alone-modes): lists posted one after
   another: the latency of a list on an idle flock.
3. baseline: the same numbers of bare `POST /api/nests/todo/messages` at the same
   concurrency (crows not invoked), each timed from just before its POST to its
   `nest.message` on the same firehose: the spine's own POST-to-event round trip.

Prints each mode beside the others, with the ratios. Not part of the test suite; every
process it starts is stopped on exit, Ctrl+C or error.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
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

from bench._stream_servers import settle_process  # noqa: E402
from tests.support.server import PYTHON, LiveServer, SqliteTemplate, base_env, migrate  # noqa: E402
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


SERVER_ENV = {
    "CROWS_LIST_RATE_PER_MIN": "1000000",
    "CROWS_NEST_POST_RATE_PER_MIN": "1000000",
    "CROWS_EXCHANGES_PER_TURN": "0",
    "CROWS_WORKER_THREADS": "8",
}


class Shape:
    """The processes of one mode: servers (the first carries the firehose) and workers."""

    def __init__(self) -> None:
        self.servers: list[LiveServer] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        self.cleanup: list[Any] = []
        self.env: dict[str, str] = {}  # the environment of a manage.py command on this shape's database

    def stop(self) -> None:
        for w in self.workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for server in self.servers:
            server.stop()
        for w in self.workers:
            try:
                w.wait(timeout=40)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
        for done in reversed(self.cleanup):
            done()

    def processes(self) -> list[tuple[str, int]]:
        """(name, pid) of each process of the shape: server0.., worker0.."""
        named = [(f"server{n}", s.proc.pid) for n, s in enumerate(self.servers) if s.proc]
        return named + [(f"worker{n}", w.pid) for n, w in enumerate(self.workers)]

    def cpu_by_process(self) -> dict[str, float]:
        """User + system CPU seconds so far of each process of the shape (not PostgreSQL's)."""
        tick = os.sysconf("SC_CLK_TCK")
        out = {}
        for name, pid in self.processes():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                out[name] = (int(fields[11]) + int(fields[12])) / tick
            except (OSError, IndexError, ValueError):
                out[name] = 0.0
        return out

    def rss_mib(self) -> float:
        total = 0
        for _, pid in self.processes():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024


def machine_busy_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores (from /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(fields) - idle) / tick, sum(fields) / tick


def _prepare(env: dict[str, str]) -> None:
    # Trust everyone, and train Jev once, before the servers start.
    subprocess.run(
        [PYTHON, "manage.py", "shell", "-c",
         "from django.core.management import call_command; call_command('trust_seed', '--all'); "
         "from flock.jev import warm; warm()"],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=600,
    )


def start_shape(mode: str, work: Path, extra: dict[str, str]) -> Shape:
    shape = Shape()
    env = {**SERVER_ENV, **extra}
    data_dir = work / mode
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        if mode == "sqlite":
            template = SqliteTemplate(work / "template-root")
            data_dir = template.fresh_dir(mode)
            shape.env = base_env(CROWS_DATA_DIR=str(data_dir), **env)
            _prepare(shape.env)
            shape.servers.append(LiveServer(data_dir, env=env).start(timeout=90))
            return shape
        from tests.support.services import fresh_postgres_database, missing_postgres, missing_services

        why = missing_services() if mode == "scaleout" else missing_postgres()
        if why:
            raise SystemExit(f"mode {mode}: {why}")
        database = fresh_postgres_database()
        env["DATABASE_URL"] = database.__enter__()
        shape.cleanup.append(lambda: database.__exit__(None, None, None))
        full = shape.env = base_env(CROWS_DATA_DIR=str(data_dir), **env)
        migrate(full)
        _prepare(full)
        if mode == "postgres":
            shape.servers.append(LiveServer(data_dir, env=env).start(timeout=90))
            return shape
        env = {**env, "REDIS_URL": "redis://127.0.0.1:6379/0", "CROWS_EMBEDDED_WORKER": "0"}
        full = base_env(CROWS_DATA_DIR=str(data_dir), **env)
        for n in range(2):
            log = open(data_dir / f"worker-{n}.log", "ab")
            shape.workers.append(subprocess.Popen(
                [PYTHON, "manage.py", "db_worker", "--worker-id", f"bench-{n}-{uuid.uuid4().hex[:6]}"],
                cwd=ROOT, env=full, stdout=log, stderr=subprocess.STDOUT,
            ))
        for _ in range(2):
            shape.servers.append(LiveServer(data_dir, env=env).start(timeout=90))
        for n, worker in enumerate(shape.workers):
            # A db_worker loads Jev's models and fits its vocabulary at start, on a thread;
            # that is start-up work, not the lists' (it would land in the first figures).
            settle_process(worker.pid, f"worker{n}", timeout=120)
        return shape
    except BaseException:
        shape.stop()
        raise


TASK_STATS = """
import json, statistics
from django_tasks_db.models import DBTaskResult
rows = list(DBTaskResult.objects.filter(finished_at__isnull=False, started_at__isnull=False)
            .values_list("task_path", "enqueued_at", "started_at", "finished_at"))
waits = sorted((s - e).total_seconds() for _, e, s, _ in rows)
runs = sorted((f - s).total_seconds() for _, _, s, f in rows)
by_path = {}
for path, _, s, f in rows:
    n, busy = by_path.get(path.rsplit(".", 1)[-1], (0, 0.0))
    by_path[path.rsplit(".", 1)[-1]] = (n + 1, busy + (f - s).total_seconds())
first = min(e for _, e, _, _ in rows); last = max(f for _, _, _, f in rows)
q = lambda v, p: v[min(len(v) - 1, int(p / 100 * len(v)))]
print(json.dumps({"tasks": len(rows), "span_s": (last - first).total_seconds(), "busy_s": sum(runs),
                  "wait_p50_ms": 1000 * q(waits, 50), "wait_p99_ms": 1000 * q(waits, 99),
                  "run_p50_ms": 1000 * q(runs, 50), "run_p99_ms": 1000 * q(runs, 99),
                  "by_task": {k: [n, round(b, 2)] for k, (n, b) in sorted(by_path.items())}}))
"""


def task_stats(shape: Shape) -> dict[str, Any]:
    """Where the workers' time went: every finished task's queue wait and run time."""
    out = subprocess.run([PYTHON, "manage.py", "shell", "-c", TASK_STATS], cwd=ROOT, env=shape.env,
                         capture_output=True, text=True, timeout=120)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": (out.stderr or out.stdout)[-500:]}


def run_lists(servers: list[LiveServer], hose: Firehose, *, lists: int, items: int, concurrency: int) -> dict[str, Any]:
    text_for = ["\n".join(f"- {ITEMS[(n + k) % len(ITEMS)]}" for k in range(items)) for n in range(lists)]
    started: dict[str, float] = {}

    def post(n: int) -> None:
        with httpx.Client(timeout=60) as client:
            t0 = time.perf_counter()
            url = servers[n % len(servers)].url
            r = client.post(f"{url}/api/lists", json={"text": text_for[n], "requester": f"bench-{n % 10}"})
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


def run_baseline(servers: list[LiveServer], hose: Firehose, *, count: int, concurrency: int) -> dict[str, Any]:
    started: dict[str, float] = {}
    stamp = uuid.uuid4().hex[:12]  # each round's texts are its own

    def post(n: int) -> None:
        text = f"bench {stamp} message {n}"
        with httpx.Client(timeout=60) as client:
            t0 = time.perf_counter()
            url = servers[n % len(servers)].url
            r = client.post(f"{url}/api/nests/todo/messages", json={"author": "owner", "text": text})
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


def run_mode(mode: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    extra = {"CROWS_MOCK_LATENCY_MS": str(args.latency_ms), "CROWS_MAX_IN_FLIGHT": str(args.max_in_flight)}
    print(f"[{mode}] starting ...", flush=True)
    shape = start_shape(mode, work, extra)
    hose: Firehose | None = None
    try:
        for n, server in enumerate(shape.servers):
            # A server loads Jev's models and fits its vocabulary at start, on a thread,
            # as a db_worker does (start_shape): start-up work, not the lists'. Without
            # this wait it landed in the first figures, and more so as Jev's corpus grew.
            assert server.proc is not None
            settle_process(server.proc.pid, f"server{n}", timeout=120)
        hose = Firehose(shape.servers[0].url)
        # One small list first, so the first measured one does not pay for warming up.
        run_lists(shape.servers, hose, lists=len(shape.servers), items=1, concurrency=len(shape.servers))
        cpu_before, (busy_before, total_before) = shape.cpu_by_process(), machine_busy_s()
        lists = run_lists(shape.servers, hose, lists=args.lists, items=args.items, concurrency=args.concurrency)
        busy_after, total_after = machine_busy_s()
        cpu_after = shape.cpu_by_process()
        lists["app_cpu_s_per_list"] = sum(cpu_after[k] - cpu_before[k] for k in cpu_after) / args.lists
        lists["app_cpu_s_per_list_by_process"] = {k: round((cpu_after[k] - cpu_before[k]) / args.lists, 3)
                                                  for k in cpu_after}
        lists["machine_busy_share"] = (busy_after - busy_before) / max(1e-9, total_after - total_before)
        rss = shape.rss_mib()
        tasks = task_stats(shape)
        base = run_baseline(shape.servers, hose, count=args.lists, concurrency=args.concurrency)
        alone = []
        if mode in args.alone_modes:
            alone = [run_lists(shape.servers, hose, lists=1, items=args.items, concurrency=1)
                     for _ in range(args.alone)]
    finally:
        if hose is not None:
            hose.close()
        shape.stop()
    alone_ms = [a["p50_ms"] for a in alone]
    result = {"mode": mode, "lists": lists, "baseline": base, "rss_mib_all_processes": rss, "tasks": tasks,
              "load_average_after": os.getloadavg()}
    if alone_ms:
        result["alone"] = {"lists": len(alone), "p50_ms": percentile(alone_ms, 50), "p99_ms": percentile(alone_ms, 99)}
    print(f"[{mode}] {lists['lists_per_min']:.1f} lists/min, p50 {lists['p50_ms']:.0f} ms, "
          f"app CPU {lists['app_cpu_s_per_list'] * 1000:.0f} ms per list, "
          f"({', '.join(f'{k} {v * 1000:.0f}' for k, v in lists['app_cpu_s_per_list_by_process'].items())}), "
          f"machine {lists['machine_busy_share'] * 100:.0f}% busy, "
          f"p99 {lists['p99_ms']:.0f} ms; baseline {base['per_min']:.0f} posts/min; load {os.getloadavg()[0]:.2f}",
          flush=True)
    if "busy_s" in tasks:
        threads = int(env_threads()) * max(1, len(shape.workers) or len(shape.servers))
        print(f"[{mode}] tasks: {tasks['tasks']}, busy {tasks['busy_s']:.1f} s of {threads} threads x "
              f"{tasks['span_s']:.1f} s; wait p50/p99 {tasks['wait_p50_ms']:.0f}/{tasks['wait_p99_ms']:.0f} ms, "
              f"run p50/p99 {tasks['run_p50_ms']:.0f}/{tasks['run_p99_ms']:.0f} ms; {tasks['by_task']}", flush=True)
    return result


def env_threads() -> str:
    return SERVER_ENV["CROWS_WORKER_THREADS"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="sqlite,postgres,scaleout")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="the mock brain's latency")
    parser.add_argument("--max-in-flight", type=int, default=32)
    parser.add_argument("--threads", type=int, default=8, help="CROWS_WORKER_THREADS of every process")
    parser.add_argument("--lists", type=int, default=20)
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--alone", type=int, default=3, help="lists posted one at a time")
    parser.add_argument("--alone-modes", default="sqlite,postgres,scaleout")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (SQLite databases, server logs)")
    args = parser.parse_args()
    if not 1 <= args.items <= 20:
        parser.error("--items must be 1-20 (a list holds at most 20)")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"sqlite", "postgres", "scaleout"}:
        parser.error("--modes is a comma-separated subset of sqlite,postgres,scaleout")
    args.alone_modes = {m.strip() for m in args.alone_modes.split(",")}
    SERVER_ENV["CROWS_WORKER_THREADS"] = str(args.threads)

    work = Path(tempfile.mkdtemp(prefix="crows-bench-lists-"))
    results: dict[str, Any] = {}
    try:
        for mode in modes:
            results[mode] = run_mode(mode, work, args)
    finally:
        if args.keep:
            print(f"kept {work} (databases and server logs)")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(f"{'mode':10}{'lists/min':>11}{'p50 ms':>9}{'p99 ms':>9}{'alone p50':>11}"
          f"{'items ok':>9}{'skipped':>9}{'base/min':>10}{'RSS MiB':>9}")
    for mode, r in results.items():
        lists = r["lists"]
        alone = r.get("alone", {}).get("p50_ms", float("nan"))
        print(f"{mode:10}{lists['lists_per_min']:>11.1f}{lists['p50_ms']:>9.0f}{lists['p99_ms']:>9.0f}"
              f"{alone:>11.0f}{lists['items_answered']:>9}{sum(lists['items_skipped'].values()):>9}"
              f"{r['baseline']['per_min']:>10.0f}{r['rss_mib_all_processes']:>9.0f}")
    ratios = {}
    per_min = {m: r["lists"]["lists_per_min"] for m, r in results.items()}
    if "sqlite" in per_min and "postgres" in per_min:
        ratios["postgres_vs_sqlite"] = per_min["postgres"] / per_min["sqlite"]
    if "postgres" in per_min and "scaleout" in per_min:
        ratios["scaleout_vs_postgres"] = per_min["scaleout"] / per_min["postgres"]
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}x lists/min")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"{args.lists} lists x {args.items} items, {args.concurrency} posting at once, mock latency "
          f"{args.latency_ms:.0f} ms, max in flight {args.max_in_flight}; {machine}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "args": {k: (sorted(v) if isinstance(v, set) else v)
                                         for k, v in vars(args).items() if k != "json"},
                                         "results": results, "ratios": ratios}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
