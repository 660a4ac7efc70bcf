"""The scale-out shape started in one command: `honcho start -c web=2,worker=2` with the
repository's Procfile, on PostgreSQL and Redis. A list posted through one server is
finished by the db_workers and streamed, whole, by the other."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.support.server import PYTHON, ROOT, base_env, free_port
from tests.support.services import fresh_postgres_database, missing_services
from tests.support.sse import SSEClient

# Servers of one Redis hear each other's doorbells: tests on the shared Redis run one at a
# time (one pytest-xdist worker).
pytestmark = [pytest.mark.scaleout, pytest.mark.live, pytest.mark.xdist_group("shared-redis")]

_why = missing_services()
if _why:
    pytest.skip(_why, allow_module_level=True)

HONCHO = str(Path(PYTHON).with_name("honcho"))


def _free_port_pair() -> int:
    """A port p with p and p + 1 both free (honcho gives web.1 $PORT and web.2 $PORT + 1)."""
    for _ in range(50):
        port = free_port()
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two consecutive free ports on 127.0.0.1")


def test_the_procfile_starts_two_servers_and_two_workers_that_finish_a_list(tmp_path):
    with fresh_postgres_database() as url:
        env = base_env(
            CROWS_DATA_DIR=str(tmp_path),
            DATABASE_URL=url,
            REDIS_URL="redis://127.0.0.1:6379/0",
            CROWS_LIST_RATE_PER_MIN="100000",
            CROWS_BANTER_WAIT_S="2",
            CROWS_WORKER_THREADS="3",
        )
        env.pop("CROWS_EMBEDDED_WORKER", None)  # the Procfile turns it off by itself
        subprocess.run(
            [PYTHON, "manage.py", "shell", "-c",
             "from django.core.management import call_command; call_command('trust_seed', '--all')"],
            cwd=ROOT, env=env, check=True, capture_output=True, timeout=120,
        )
        port = _free_port_pair()
        log = open(tmp_path / "honcho.log", "wb")
        honcho = subprocess.Popen(
            [HONCHO, "start", "-f", str(ROOT / "Procfile"), "-d", str(ROOT), "-p", str(port),
             "-c", "web=2,worker=2"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            urls = [f"http://127.0.0.1:{port + n}" for n in (0, 1)]
            deadline = time.monotonic() + 60
            for u in urls:
                while True:
                    try:
                        if httpx.get(f"{u}/api/state", timeout=2).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    assert time.monotonic() < deadline, (tmp_path / "honcho.log").read_text()[-3000:]
                    time.sleep(0.2)
            r = httpx.post(f"{urls[0]}/api/lists", json={
                "text": "- write a haiku about crows\n- plan the team offsite for March", "requester": "ada"
            }, timeout=30)
            assert r.status_code == 202, r.text
            list_id = r.json()["list_id"]
            stream = SSEClient(f"{urls[1]}/api/events?list_id={list_id}")
            try:
                frame = stream.wait_for(lambda f: f.event == "list.finished", timeout=90)
            finally:
                stream.close()
            assert frame.data["list_id"] == list_id
            assert "embedded" not in (tmp_path / "honcho.log").read_text()
        finally:
            os.killpg(honcho.pid, signal.SIGTERM)
            try:
                honcho.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(honcho.pid, signal.SIGKILL)
                honcho.wait()
