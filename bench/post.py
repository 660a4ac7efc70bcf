"""A nest POST's server CPU beside a bare insert-and-publish, same run (issue 14, target:
within 3x).

    .venv/bin/python bench/post.py [--posts 300] [--rounds 5] [--posters 4] [--json out.json]

Starts four daphne servers on 127.0.0.1, each on its own freshly migrated SQLite copy,
with bench/stream.py's settings (no crows invoked, no rate limit, no background worker):
the app, the app with the POST's action swapped for a bare insert-and-publish
(bench/bare_action_asgi.py: the web stack's share of the app's cost), the stock
bare-Channels baseline (bench/baseline_asgi.py: a POST inserts one event row and
`group_send`s its frame) and the lean one (the same on an in-process layer without the
stock layer's per-send copies). Then, in rounds that alternate the servers
so background load hits all alike, --posters keep-alive connections POST --posts owner
messages to /api/nests/todo/messages, and the server's CPU time (user + system, from
/proc) is divided by the posts. Nobody is subscribed: this is the POST's own cost.

Not part of the test suite. To see where the app's time goes, attach py-spy (not a
dependency) to the app server's pid while a round runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._stream_clients import Poster  # noqa: E402
from bench._stream_servers import BASELINE_APP, CROWS_APP, Server, copy_db, migrate  # noqa: E402

PATH = "/api/nests/todo/messages"
BARE_ACTION_APP = "bench.bare_action_asgi:application"


async def post_round(port: int, posts: int, posters: int, label: str) -> float:
    """POST `posts` messages over `posters` connections; returns the wall seconds."""
    clients = [Poster(port) for _ in range(posters)]
    per = posts // posters
    started = time.perf_counter()

    async def run(k: int) -> None:
        for i in range(per):
            body = json.dumps({"author": "owner", "text": f"{label} poster {k} message {i}"}).encode()
            status = await clients[k].post(PATH, body)
            if status not in (200, 201):
                raise RuntimeError(f"POST answered {status}")

    await asyncio.gather(*(run(k) for k in range(posters)))
    for c in clients:
        c.close()
    return time.perf_counter() - started


def cpu_per_post(server: Server, posts: int, posters: int, label: str) -> tuple[float, float]:
    before = server.cpu_s()
    wall = asyncio.run(post_round(server.port, posts, posters, label))
    time.sleep(0.3)  # let on-commit work that follows the last answer land in the figure
    return (server.cpu_s() - before) / (posts // posters * posters) * 1000, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--posters", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="crows-bench-post-"))
    servers: dict[str, Server] = {}
    try:
        template = work / "template"
        migrate(template)
        servers = {
            "crows": Server("crows", CROWS_APP, copy_db(template, work / "crows")),
            "bare": Server("bare", BARE_ACTION_APP, copy_db(template, work / "bare")),
            "stock": Server("stock", BASELINE_APP, copy_db(template, work / "stock")),
            "lean": Server("lean", BASELINE_APP, copy_db(template, work / "lean"),
                           extra_env={"BENCH_LEAN_LAYER": "1"}),
        }
        for server in servers.values():
            server.start(timeout=120)
        for server in servers.values():
            server.settle(timeout=120)
            cpu_per_post(server, 60, args.posters, "warm-up")  # first posts load Jev, fill caches
        figures: dict[str, list[float]] = {name: [] for name in servers}
        walls: dict[str, list[float]] = {name: [] for name in servers}
        for r in range(args.rounds):
            for name, server in servers.items():
                ms, wall = cpu_per_post(server, args.posts, args.posters, f"round {r}")
                figures[name].append(ms)
                walls[name].append(wall)
        result = {name: {"cpu_ms_per_post_median": statistics.median(v), "rounds": v,
                         "posts_per_s_median": statistics.median(args.posts / w for w in walls[name])}
                  for name, v in figures.items()}
        crows = result["crows"]["cpu_ms_per_post_median"]
        for name in ("bare", "stock", "lean"):
            result[name]["crows_ratio"] = crows / result[name]["cpu_ms_per_post_median"]
        result["bare"]["stock_ratio"] = (
            result["bare"]["cpu_ms_per_post_median"] / result["stock"]["cpu_ms_per_post_median"]
        )
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"{'server':8}{'CPU ms/POST (median)':>22}{'rounds':>40}{'POST/s':>9}")
    for name, r in result.items():
        rounds = " ".join(f"{v:.2f}" for v in r["rounds"])
        print(f"{name:8}{r['cpu_ms_per_post_median']:>22.2f}{rounds:>40}{r['posts_per_s_median']:>9.0f}")
    print(f"crows / stock: {result['stock']['crows_ratio']:.2f}x   crows / lean: {result['lean']['crows_ratio']:.2f}x"
          f"   (target: within 3x)")
    print(f"bare action / stock: {result['bare']['stock_ratio']:.2f}x (the web stack's share)   "
          f"crows / bare action: {result['bare']['crows_ratio']:.2f}x (the chatroom's work)")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"{args.rounds} rounds of {args.posts} POSTs over {args.posters} keep-alive connections; {machine}; "
          f"load average {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "args": {k: str(v) for k, v in vars(args).items()},
                                         "results": result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
