"""A real daphne server on loopback, as users run it: `manage.py migrate` then daphne."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support import prefork

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
DAPHNE = str(Path(sys.executable).with_name("daphne"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Jev's cache is keyed by its training data, so every test server, the test processes
# themselves (tests/conftest.py points their settings here) and every pytest-xdist worker
# share one.
JEV_TEST_CACHE = ROOT / ".data" / "jev-test-cache"
# Set once the cache is known to be warm, and inherited by the processes started after
# that (pytest-xdist's workers): they skip even the check.
JEV_WARMED_ENV = "CROWS_TEST_JEV_WARMED"
_jev_cache_lock = threading.Lock()
_jev_cache_ready = False


def ensure_jev_cache() -> None:
    """Train Jev's models and fit its crow-fit vocabulary into the shared test cache once
    per test run, before the first server needs them, with `manage.py jev_warm` as run.sh
    does. On a fresh clone a server otherwise trains them itself (tens of seconds on a busy
    machine) while a test's first post waits past its timeout, and every server would fit
    the vocabulary again at start. A file lock keeps two test processes from training at
    once (the second then finds the cache warm and only checks it)."""
    global _jev_cache_ready
    if os.environ.get(JEV_WARMED_ENV) == str(JEV_TEST_CACHE):
        return
    with _jev_cache_lock:
        if _jev_cache_ready:
            return
        JEV_TEST_CACHE.mkdir(parents=True, exist_ok=True)
        with open(JEV_TEST_CACHE.parent / "jev-test-cache.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("CROWS_", "DJANGO_", "PYTEST"))}
            env.pop("DATABASE_URL", None)
            env.update(DJANGO_SETTINGS_MODULE="crows_site.settings", CROWS_JEV_CACHE_DIR=str(JEV_TEST_CACHE))
            warm = subprocess.run(
                [PYTHON, "manage.py", "jev_warm"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
            )
            if warm.returncode != 0:
                raise RuntimeError(f"manage.py jev_warm failed:\n{warm.stdout}{warm.stderr}")
        _jev_cache_ready = True


def base_env(**overrides: str) -> dict[str, str]:
    ensure_jev_cache()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROWS_", "DJANGO_", "PYTEST"))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env["DJANGO_SETTINGS_MODULE"] = "crows_site.settings"
    env["PYTHONUNBUFFERED"] = "1"
    env["CROWS_JEV_CACHE_DIR"] = str(JEV_TEST_CACHE)
    env.update(overrides)
    return env


def migrate(env: dict[str, str]) -> None:
    subprocess.run(
        [PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=120,
    )


class LiveServer:
    """One daphne process. `stop()` and `start()` again keep its port and database."""

    def __init__(self, data_dir: Path, *, env: dict[str, str] | None = None, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = base_env(CROWS_DATA_DIR=str(data_dir), **(env or {}))
        self.proc: subprocess.Popen[bytes] | prefork.Forked | None = None
        self.log_path = data_dir / f"daphne-{self.port}.log"

    def start(self, timeout: float = 60) -> LiveServer:
        return self.launch().wait_ready(timeout)

    def launch(self) -> LiveServer:
        """Start daphne and return at once; `wait_ready` waits for its first answer."""
        argv = [DAPHNE, "-b", "127.0.0.1", "-p", str(self.port), "crows_site.asgi:application"]
        if prefork.enabled():
            self.proc = prefork.Preforker.shared().spawn(argv, env=self.env, cwd=ROOT, log_path=self.log_path)
            return self
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        return self

    def wait_ready(self, timeout: float = 60) -> LiveServer:
        assert self.proc is not None, "launch() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log_path.read_text()[-2000:]}")
            try:
                # 401: up, but guarded by CROWS_OWNER_TOKEN (docs/SECURITY.md).
                if httpx.get(f"{self.url}/api/state", timeout=2).status_code in (200, 401):
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"daphne did not answer on {self.url}")

    def stop(self, hard: bool = False) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.get(self.url + path, timeout=kw.pop("timeout", 30), **kw)

    def post(self, path: str, json: Any = None, **kw: Any) -> httpx.Response:
        return httpx.post(self.url + path, json=json, timeout=kw.pop("timeout", 30), **kw)

    def manage(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PYTHON, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


class ServerPool:
    """Servers launched one test ahead, for the fixtures that many tests in a row take with
    the same settings (the browser suite's mock flock): while a test runs, the next test's
    daphne boots beside it (about 2.5 s of CPU, mostly imports and loading Jev), so the next
    test starts against a server that is already up instead of waiting for one. Each server
    is fresh: its own copy of the migrated template, never used by another test. The last
    spare of each kind is stopped unused when the session ends."""

    def __init__(self, template: SqliteTemplate) -> None:
        self.template = template
        self.spares: dict[tuple[tuple[str, str], ...], LiveServer] = {}
        self.launched = 0

    def take(self, env: dict[str, str]) -> LiveServer:
        key = tuple(sorted(env.items()))
        server = self.spares.pop(key, None) or self._launch(env)
        self.spares[key] = self._launch(env)
        return server.wait_ready()

    def _launch(self, env: dict[str, str]) -> LiveServer:
        self.launched += 1
        return LiveServer(self.template.fresh_dir(f"pooled-{self.launched}"), env=env).launch()

    def close(self) -> None:
        for server in self.spares.values():
            server.stop()
        self.spares.clear()


class SqliteTemplate:
    """Migrates one SQLite database per test session; each server gets a copy."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "template" / "crows.sqlite3"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        migrate(base_env(CROWS_DATA_DIR=str(self.path.parent)))

    def fresh_dir(self, name: str) -> Path:
        target = self.root / name
        target.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            source = self.path.with_name(self.path.name + suffix)
            if source.exists():
                shutil.copy(source, target / source.name)
        return target
