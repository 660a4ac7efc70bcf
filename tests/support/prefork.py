"""Test servers forked from an interpreter that has already imported their libraries.

Every live daphne a test starts used to be a new interpreter that imported Twisted,
autobahn, OpenSSL, Django's HTTP and ORM layers and pydantic before it read a setting:
about 1.3 s of CPU of its 3 s start (docs/TESTING.md), paid by well over a hundred servers
a run. A *preforker* is one process per test process that imports those libraries once,
without configuring Django or installing Twisted's reactor, and forks a child for each
server: the child takes the server's environment, working directory and log, then runs
daphne's own command line, exactly as `daphne -b … -p … crows_site.asgi:application`
does. Everything that reads settings, the app's modules, Jev and the reactor's event
loop happens in the child, after the fork, so no two servers share state.

The handle (`Forked`) answers like `subprocess.Popen` for what `LiveServer` asks of it
(`poll`, `wait`, `send_signal`, `kill`, `pid`, `returncode`). The forked server is the
preforker's child, not the test's: the preforker reaps it and writes its exit status
beside its log, which `poll` reads.

`CROWS_TEST_PREFORK=0` starts every server as a fresh interpreter instead.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# What every server imports before it reads a setting, and that is safe to share across a
# fork: pure modules with no threads, no open sockets or files, no Django settings read
# and, above all, no Twisted reactor installed (daphne.server installs the asyncio one
# at import, with its own event loop: that import happens in each child).
PRELOAD = (
    "twisted.internet.asyncioreactor",
    "twisted.internet.tcp",
    "twisted.internet.ssl",
    "twisted.web.http",
    "autobahn.twisted.websocket",
    "django.http",
    "django.urls",
    "django.db.models",
    "django.core.handlers.asgi",
    "django.forms",
    "django.template.base",
    "pydantic",
    "channels",
    "asgiref.sync",
    "httpx",
    "numpy",
    "django.contrib.staticfiles.handlers",
    "django.core.serializers.json",
    "django.db.backends.sqlite3.base",
)


def enabled() -> bool:
    return os.environ.get("CROWS_TEST_PREFORK", "1") != "0"


class Forked:
    """A forked server's handle, answering as `subprocess.Popen` does for LiveServer."""

    def __init__(self, pid: int, args: list[str], status_path: Path) -> None:
        self.pid = pid
        self.args = args
        self.status_path = status_path
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and self.status_path.exists():
            self.returncode = int(self.status_path.read_text())
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Preforker:
    """The test process's side: starts the preforker on first use and asks it for servers."""

    _lock = threading.Lock()
    _instance: Preforker | None = None

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CROWS_", "DJANGO_", "PYTEST"))}
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.prefork"],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.requests = self.proc.stdin
        self.replies = self.proc.stdout
        ready = self.replies.readline()
        if json.loads(ready or b"{}").get("ready") is not True:
            raise RuntimeError(f"the preforker did not start: {ready!r}")

    @classmethod
    def shared(cls) -> Preforker:
        with cls._lock:
            if cls._instance is None or cls._instance.proc.poll() is not None:
                cls._instance = cls()
            return cls._instance

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: Path, log_path: Path) -> Forked:
        status_path = log_path.with_name(log_path.name + f".{time.monotonic_ns()}.exit")
        request = {"argv": argv, "env": env, "cwd": str(cwd), "log": str(log_path), "status": str(status_path)}
        with self._lock:
            self.requests.write(json.dumps(request).encode() + b"\n")
            self.requests.flush()
            reply = json.loads(self.replies.readline() or b"{}")
        if "pid" not in reply:
            raise RuntimeError(f"the preforker could not start {argv}: {reply}")
        return Forked(reply["pid"], argv, status_path)


# ---- the preforker process ------------------------------------------------------------


def _run_child(request: dict[str, Any]) -> None:
    """In the forked child: become the server the request describes, then exit."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        # Each server draws its own random numbers, as a new interpreter would.
        random.seed()
        from daphne.cli import CommandLineInterface

        CommandLineInterface.entrypoint()
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _record_exits(children: dict[int, str]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        path = children.pop(pid, None)
        if path is None:
            continue
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        partial = path + ".part"
        with open(partial, "w") as f:
            f.write(str(code))
        os.replace(partial, path)


def serve() -> None:
    for name in PRELOAD:
        __import__(name)
    assert "twisted.internet.reactor" not in sys.modules, "a preloaded module installed a reactor"
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    requests = sys.stdin.fileno()
    children: dict[int, str] = {}
    sys.stdout.write(json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()
    pending = b""
    while True:
        readable, _, _ = select.select([requests, wake_r], [], [], 1.0)
        if wake_r in readable:
            os.read(wake_r, 4096)
        _record_exits(children)
        if requests not in readable:
            continue
        chunk = os.read(requests, 65536)
        if not chunk:
            break  # the test process is gone; its servers are stopped by its fixtures
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                os.close(wake_r)
                os.close(wake_w)
                _run_child(request)
            children[pid] = request["status"]
            sys.stdout.write(json.dumps({"pid": pid}) + "\n")
            sys.stdout.flush()
    # Whatever still runs when the tests are gone is stopped, as an interrupted run's
    # servers would be by their fixtures.
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


if __name__ == "__main__":
    serve()
