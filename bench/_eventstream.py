"""django-eventstream for bench/stream.py: its own venv, its server, and the reconnect check.

The venv (`.data/bench-venvs/eventstream`, made once with the bench's Python, pinned
versions, never touching the project's venv) holds django-eventstream with its own Django
and daphne; `bench/eventstream_app` is the project it serves.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from _stream_servers import ROOT, Server

BENCH = Path(__file__).resolve().parent
VENV = ROOT / ".data" / "bench-venvs" / "eventstream"
PINS = ["django-eventstream==5.3.4", "daphne==4.2.3", "Django==6.1.3"]
APP = "eventstream_app.asgi:application"


def ensure_venv() -> Path:
    marker = VENV / ".crows-pins"
    if marker.exists() and marker.read_text() == " ".join(PINS):
        return VENV
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, timeout=300)
    subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", *PINS], check=True, timeout=900)
    marker.write_text(" ".join(PINS))
    return VENV


def _env(data_dir: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROWS_", "DJANGO_", "PYTEST", "VIRTUAL_ENV"))}
    env.update(
        PYTHONPATH=str(BENCH),
        DJANGO_SETTINGS_MODULE="eventstream_app.settings",
        ES_DATA_DIR=str(data_dir),
        PYTHONUNBUFFERED="1",
    )
    return env


def migrate(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(VENV / "bin" / "python"), "-m", "django", "migrate", "--noinput", "-v", "0"],
        cwd=BENCH, env=_env(data_dir), check=True, capture_output=True, timeout=180,
    )


def fill(data_dir: Path, total: int, channel: str = "todo") -> None:
    """`total` stored events on `channel` (eids 1..total), written straight into the
    library's tables in one transaction, as the app's replay events are."""
    import sqlite3

    db = sqlite3.connect(data_dir / "eventstream.sqlite3")
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    rows = [
        (channel, "message", json.dumps({"nest_id": channel, "author": "owner", "text": f"stored message {i}",
                                         "ts": now}), i, now)
        for i in range(1, total + 1)
    ]
    with db:
        db.executemany("INSERT INTO django_eventstream_event (channel, type, data, eid, created)"
                       " VALUES (?, ?, ?, ?, ?)", rows)
        db.execute("INSERT OR REPLACE INTO django_eventstream_eventcounter (name, value, updated)"
                   " VALUES (?, ?, ?)", (channel, total, now))
    db.close()


class EventstreamServer(Server):
    def __init__(self, name: str, data_dir: Path) -> None:
        super().__init__(name, APP, data_dir, root=BENCH)

    def launch(self) -> Server:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(VENV / "bin" / "daphne"), "-b", "127.0.0.1", "-p", str(self.port), APP],
            cwd=BENCH, env=_env(self.data_dir), stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        return self


# -- lost and duplicated events under reconnects -----------------------------------------------


def reconnect_check(url: str, *, writers: int = 4, per_writer: int = 25, readers: int = 3,
                    seed: int = 7, tag: str = "") -> dict[str, int]:
    """`readers` clients open `?nest_id=todo` and wait for a start message; then `writers`
    threads each POST `per_writer` messages at once while the readers drop the connection
    at random moments and reconnect with Last-Event-ID set to the last id they saw, as a
    browser's EventSource does. Counts, over all readers, messages never received and
    messages received twice."""
    tag = tag or f"{random.randrange(16**6):06x}"
    texts = [f"rc-{tag}-{w}-{i}" for w in range(writers) for i in range(per_writer)]
    first = f"rc-{tag}-start"
    done = threading.Event()
    connected = threading.Barrier(readers + 1)
    started = [threading.Event() for _ in range(readers)]
    received: list[list[str]] = [[] for _ in range(readers)]

    def write(w: int) -> None:
        with httpx.Client(timeout=30) as client:
            for i in range(per_writer):
                client.post(f"{url}/api/nests/todo/messages", json={"author": "owner", "text": f"rc-{tag}-{w}-{i}"})

    def read(n: int) -> None:
        rng = random.Random(seed + n)
        cursor: str | None = None
        quiet_since = None
        while True:
            deadline = time.monotonic() + rng.uniform(0.05, 0.6)
            headers = {"Last-Event-ID": cursor} if cursor else {}
            try:
                with httpx.Client(timeout=httpx.Timeout(10, read=2.0)) as client, client.stream(
                    "GET", f"{url}/api/events?nest_id=todo", headers=headers
                ) as response:
                    if cursor is None:
                        connected.wait(timeout=30)
                    event_id = None
                    for line in response.iter_lines():
                        if line.startswith("id:"):
                            event_id = line[3:].strip()
                        elif line.startswith("data:"):
                            if f"rc-{tag}-" in line:
                                text = json.loads(line[5:].strip()).get("text", "")
                                if text == first:
                                    started[n].set()
                                elif text.startswith(f"rc-{tag}-"):
                                    received[n].append(text)
                                    quiet_since = None
                            # A frame is complete (one data line each): its id is the cursor.
                            if event_id and started[n].is_set():
                                cursor = event_id
                            event_id = None
                        elif line == "" and started[n].is_set() and not done.is_set() \
                                and time.monotonic() > deadline:
                            break  # drop the connection between frames
            except httpx.ReadTimeout:
                pass
            except (httpx.HTTPError, threading.BrokenBarrierError):
                time.sleep(0.05)
            if done.is_set():
                quiet_since = quiet_since or time.monotonic()
                if set(texts) <= set(received[n]) or time.monotonic() - quiet_since > 4:
                    return

    threads = [threading.Thread(target=read, args=(n,), daemon=True) for n in range(readers)]
    for t in threads:
        t.start()
    connected.wait(timeout=30)
    time.sleep(0.3)
    httpx.post(f"{url}/api/nests/todo/messages", json={"author": "owner", "text": first}, timeout=30)
    for ev in started:
        ev.wait(timeout=30)
    writing = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in writing:
        t.start()
    for t in writing:
        t.join()
    done.set()
    for t in threads:
        t.join(timeout=60)
    lost = sum(len(set(texts) - set(got)) for got in received)
    doubled = sum(len(got) - len(set(got)) for got in received)
    return {"posted": len(texts), "readers": readers, "lost": lost, "duplicated": doubled}
