"""Waking workers in other processes, on PostgreSQL (flock/worker.py, docs/STREAM.md): a
transaction that enqueues tasks sends one NOTIFY once it commits, naming the sending
process (whose own listener ignores it); a rolled-back transaction sends none."""

from __future__ import annotations

import subprocess
import time

import psycopg
import pytest

from tests.support.server import PYTHON, ROOT, base_env
from tests.support.services import fresh_postgres_database, missing_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

# Enqueues three tasks in one transaction, says so, and holds the transaction open a
# moment before committing; then a second transaction enqueues one and rolls back.
SCRIPT = """
import sys, time
from django.db import transaction
from flock import worker
from nests.tasks import finish_list_task
worker.connect_signals()
with transaction.atomic():
    for n in range(3):
        finish_list_task.enqueue(10_000 + n)
    print("enqueued", worker._PROCESS_TOKEN, flush=True)
    time.sleep(1.0)
print("committed", flush=True)
try:
    with transaction.atomic():
        finish_list_task.enqueue(20_000)
        raise RuntimeError("roll back")
except RuntimeError:
    pass
print("rolled back", flush=True)
time.sleep(0.5)
"""


def test_one_notify_per_transaction_after_its_commit_and_none_for_a_rollback(tmp_path):
    with fresh_postgres_database() as url:
        env = base_env(CROWS_DATA_DIR=str(tmp_path), DATABASE_URL=url, CROWS_EMBEDDED_WORKER="0")
        with psycopg.connect(url, autocommit=True) as listener:
            listener.execute("LISTEN crows_tasks")
            proc = subprocess.Popen(
                [PYTHON, "manage.py", "shell", "-v", "0", "-c", SCRIPT],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            assert proc.stdout is not None
            try:
                line = proc.stdout.readline()
                assert line.startswith("enqueued "), line + proc.stderr.read()
                token = line.split()[1]
                # The transaction is still open: nothing may have been sent yet.
                assert list(listener.notifies(timeout=0.5)) == []
                assert proc.stdout.readline().strip() == "committed"
                assert proc.stdout.readline().strip() == "rolled back"
                proc.wait(timeout=30)
            finally:
                proc.kill()
            time.sleep(0.2)
            notes = list(listener.notifies(timeout=0.5))
        assert [n.payload for n in notes] == [token], notes
        with psycopg.connect(url) as conn:
            queued = conn.execute("SELECT count(*) FROM django_tasks_database_dbtaskresult").fetchone()[0]
        assert queued == 3
