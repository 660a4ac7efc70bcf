"""Daphne processes for bench/stream.py: each on loopback with its own migrated SQLite copy."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
DAPHNE = str(Path(sys.executable).with_name("daphne"))
DB_NAME = "crows.sqlite3"

CROWS_APP = "crows_site.asgi:application"
BASELINE_APP = "bench.baseline_asgi:application"

# Posting owner messages must not invoke crows nor trip the rate limit; no background worker.
SERVER_ENV = {
    "CROWS_NEST_POST_RATE_PER_MIN": "1000000",
    "CROWS_EXCHANGES_PER_TURN": "0",
    "CROWS_EMBEDDED_WORKER": "0",
}


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds process `pid` (all its threads) has used so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def settle_process(pid: int, name: str, timeout: float = 60) -> float:
    """Wait until process `pid` is quiet: under 3% of a core and RSS steady over half a
    second (start-up work such as loading models in a thread would otherwise land in
    the figures). Returns the seconds waited; raises if it never settles."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        cpu, rss = process_cpu_s(pid), process_rss_kib(pid)
        time.sleep(0.5)
        if process_cpu_s(pid) - cpu < 0.015 and abs(process_rss_kib(pid) - rss) < 256:
            return time.monotonic() - started
    raise TimeoutError(f"{name}: still busy {timeout:.0f} s after start-up")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROWS_", "DJANGO_", "PYTEST"))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.update(SERVER_ENV)
    env["DJANGO_SETTINGS_MODULE"] = "crows_site.settings"
    env["CROWS_DATA_DIR"] = str(data_dir)
    # Every server here has its own data dir; they share one cache of Jev's trained models
    # (its knob says several servers may), so only the first one trains them.
    env["CROWS_JEV_CACHE_DIR"] = str(data_dir.parent / "jev-cache")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def migrate(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env_for(data_dir),
        check=True,
        capture_output=True,
        timeout=180,
    )


def copy_db(source_dir: Path, target_dir: Path) -> Path:
    target_dir.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        source = source_dir / (DB_NAME + suffix)
        if source.exists():
            shutil.copy(source, target_dir / source.name)
    return target_dir


# 10,000 post_message calls take 40-100 s on these machines, far over the bench's budget, so
# SEED messages go through the real action and the rest of the stream is copied from them
# in one SQL statement: same event name, stream key and payload shape, each copy with its
# own msg_id and text, ids in order. Replay reads only the event log, so it cannot tell.
FILL_EVENTS = """
import sys
from django.db import connection, transaction
from flock.models import Event
from nests.actions import post_message

SEED, TOTAL = {seed}, {total}
with transaction.atomic():
    for i in range(1, SEED + 1):
        post_message("todo", author="owner", text=f"replay {{i}}")
table = Event._meta.db_table
with transaction.atomic(), connection.cursor() as cursor:
    cursor.execute(
        "WITH RECURSIVE k(n) AS (SELECT %s UNION ALL SELECT n + 1 FROM k WHERE n < %s), "
        "seed AS (SELECT id, name, list_key, nest_key, payload, created_at, "
        "  ROW_NUMBER() OVER (ORDER BY id) - 1 AS r FROM " + table + " WHERE nest_key = 'todo') "
        "INSERT INTO " + table + " (name, list_key, nest_key, payload, created_at) "
        "SELECT seed.name, seed.list_key, seed.nest_key, "
        "  json_set(seed.payload, '$.msg_id', 'todo-' || k.n, '$.text', 'replay ' || k.n), seed.created_at "
        "FROM k JOIN seed ON seed.r = (k.n - 1) %% %s ORDER BY k.n",
        [SEED + 1, TOTAL, SEED],
    )
ids = list(Event.objects.filter(nest_key="todo").order_by("id").values_list("id", flat=True))
assert len(ids) == TOTAL and ids == sorted(ids), (len(ids), TOTAL)
connection.close()
print("filled", len(ids), ids[-1])
"""


def fill_events(data_dir: Path, total: int, seed: int = 50) -> tuple[float, int]:
    """Store `total` events on nest todo; returns the seconds taken and the last event id."""
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", FILL_EVENTS.format(seed=seed, total=total)],
        cwd=ROOT,
        env=env_for(data_dir),
        capture_output=True,
        text=True,
        timeout=240,
    )
    words = done.stdout.split()
    if done.returncode != 0 or "filled" not in words:
        raise RuntimeError(f"filling {total} events failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - started, int(words[words.index("filled") + 2])


class Server:
    """One daphne process serving `app` from the project root."""

    def __init__(self, name: str, app: str, data_dir: Path, root: Path = ROOT,
                 extra_env: dict[str, str] | None = None) -> None:
        self.name = name
        self.extra_env = extra_env or {}
        self.root = root
        self.app = app
        self.data_dir = data_dir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir / f"daphne-{name}-{self.port}.log"

    def launch(self) -> Server:
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [DAPHNE, "-b", "127.0.0.1", "-p", str(self.port), self.app],
            cwd=self.root,
            env={**env_for(self.data_dir), **self.extra_env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        return self

    def wait_ready(self, timeout: float = 60) -> Server:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: daphne exited:\n{self.log()[-3000:]}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/api/state")
                status = conn.getresponse().status
                conn.close()
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"{self.name}: daphne did not answer on port {self.port}:\n{self.log()[-3000:]}")

    def start(self, timeout: float = 60) -> Server:
        return self.launch().wait_ready(timeout)

    def settle(self, timeout: float = 60) -> float:
        """Wait until the server is quiet (see `settle_process`)."""
        return settle_process(self.pid, self.name, timeout)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_kib(self) -> int:
        return process_rss_kib(self.pid)

    def cpu_s(self) -> float:
        """User + system CPU seconds the server process (all its threads) has used so far."""
        return process_cpu_s(self.pid)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
