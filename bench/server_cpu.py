"""CPU a live server spends to start and to serve owner posts, for two checkouts side by side.

    .venv/bin/python bench/server_cpu.py [--posts 20] [--rounds 3] [ROOT ...]

Each ROOT (default: this checkout) is a checkout of the project sharing this `.venv`. For
each round and each root, in alternation (load drift hits them alike), it starts daphne on
a fresh SQLite database from that root, reads the process's CPU (user + sys, from /proc)
once it answers, posts owner messages to a crow in the `todo` nest with the mock brain and
waits for the crow's replies, then reads the CPU again. It prints CPU seconds, not wall
time: a server's start is what every live and browser test pays, and a post what the
reactors behind it cost. Counted in CPU, both figures hold steady on a loaded machine far
better than wall time does (docs/TESTING.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

import httpx  # noqa: E402

from bench._stream_servers import free_port, process_cpu_s, settle_process  # noqa: E402


def one_server(root: Path, posts: int) -> tuple[float, float]:
    data = Path(tempfile.mkdtemp(prefix="server-cpu-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROWS_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="crows_site.settings",
        CROWS_DATA_DIR=str(data),
        # Each root's own cache: two checkouts' data may differ, and a cache keeps one
        # version per question.
        CROWS_JEV_CACHE_DIR=str(root / ".data" / "jev-test-cache"),
    )
    python = str(HERE / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "jev_warm"], cwd=root, env=env, check=True, capture_output=True)
    subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=root, env=env, check=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(HERE / ".venv" / "bin" / "daphne"), "-b", "127.0.0.1", "-p", str(port), "crows_site.asgi:application"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                if httpx.get(url + "/api/state", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        # Jev warms on a background thread: wait until the start has settled.
        settle_process(proc.pid, "daphne")
        started = process_cpu_s(proc.pid)
        crow = httpx.get(url + "/api/crows", timeout=30).json()
        crows = crow["crows"] if isinstance(crow, dict) else crow
        name = crows[0]["name"]
        for i in range(posts):
            r = httpx.post(
                url + "/api/nests/todo/messages",
                json={"author": "owner", "text": f"@{name} please summarise note {i}: the launch moved to Friday"},
                timeout=60,
            )
            r.raise_for_status()
        settle_process(proc.pid, "daphne")
        return started, process_cpu_s(proc.pid) - started
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("roots", nargs="*", type=Path, default=[HERE])
    parser.add_argument("--posts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures: dict[Path, list[tuple[float, float]]] = {root: [] for root in args.roots}
    for _ in range(args.rounds):
        for root in args.roots:
            figures[root].append(one_server(root, args.posts))
    base = args.roots[0]
    base_start = statistics.median(s for s, _ in figures[base])
    base_posts = statistics.median(p for _, p in figures[base])
    for root, runs in figures.items():
        start = statistics.median(s for s, _ in runs)
        posts = statistics.median(p for _, p in runs)
        print(
            f"{root}: start {start:.2f} s CPU ({start / base_start:.2f}x), "
            f"{args.posts} posts {posts:.2f} s CPU ({posts / base_posts:.2f}x), "
            f"{posts / args.posts * 1000:.0f} ms a post  runs={[(round(s, 2), round(p, 2)) for s, p in runs]}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
