"""PostgreSQL and Redis on 127.0.0.1 for the scale-out tests, when this machine has them."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PG_HOST, PG_PORT = "127.0.0.1", 5432
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
PG_ADMIN_URL = os.environ.get("CROWS_TEST_PG_ADMIN", f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test")


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def missing_postgres() -> str:
    """Why PostgreSQL-only tests cannot run here, or "" when they can."""
    if not reachable(PG_HOST, PG_PORT):
        return f"this test needs PostgreSQL on {PG_HOST}:{PG_PORT}, which this machine does not answer on"
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3):
            pass
    except Exception as exc:
        return f"could not log in to PostgreSQL at {PG_ADMIN_URL}: {exc}"
    return ""


def missing_services() -> str:
    """Why the scale-out tests cannot run here, or "" when they can."""
    missing = []
    if not reachable(PG_HOST, PG_PORT):
        missing.append(f"PostgreSQL on {PG_HOST}:{PG_PORT}")
    if not reachable(REDIS_HOST, REDIS_PORT):
        missing.append(f"Redis on {REDIS_HOST}:{REDIS_PORT}")
    if missing:
        return "scale-out tests need " + " and ".join(missing) + ", which this machine does not answer on"
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL, connect_timeout=3):
            pass
    except Exception as exc:
        return f"scale-out tests could not log in to PostgreSQL at {PG_ADMIN_URL}: {exc}"
    return ""


def _migrations_key() -> str:
    """A hash of every migration the project and its dependencies apply: a template made
    from other migrations is never used."""
    import hashlib

    from tests.support.server import ROOT

    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update((ROOT / "requirements.lock").read_bytes())
    return digest.hexdigest()[:12]


def _migrated_template() -> str:
    """The name of a PostgreSQL database migrated once for this version of the migrations
    and kept as a template between runs. Cloning it costs well under a second; migrating a
    new database costs over ten seconds of two processes' CPU, and the scale-out tests
    made a dozen. A file lock keeps parallel test workers from building it twice."""
    import fcntl
    import tempfile

    import psycopg

    from tests.support.server import base_env, migrate

    name = f"crows_tpl_{_migrations_key()}"
    # One lock for every checkout on this machine: they share the PostgreSQL server.
    lock_path = Path(tempfile.gettempdir()) / "crows-pg-template.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                return name
            # Built under another name and renamed when whole, so a run stopped half-way
            # never leaves a half-migrated template behind.
            building = f"crows_tplbuild_{uuid.uuid4().hex[:10]}"
            admin.execute(f'CREATE DATABASE "{building}"')
            base = PG_ADMIN_URL.rsplit("/", 1)[0]
            try:
                with tempfile.TemporaryDirectory() as data_dir:
                    migrate(base_env(CROWS_DATA_DIR=data_dir, DATABASE_URL=f"{base}/{building}"))
                admin.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
            except BaseException:
                admin.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
                raise
            stale = admin.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'crows\\_tpl\\_%%' AND datname <> %s", (name,)
            ).fetchall()
            for (old,) in stale:
                admin.execute(f'DROP DATABASE IF EXISTS "{old}" WITH (FORCE)')
    return name


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new database for one test, already migrated (a clone of `_migrated_template`),
    dropped afterwards."""
    import psycopg

    template = _migrated_template()
    name = f"crows_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# For scripts given to run_on_fresh_postgres that check which row locks a transaction holds
# while it waits (prepend it): `lock_waiters(probe)` waits until a backend of the database
# waits for a lock and returns how many do; `row_lock(probe, table, pk)` is "held" or "free".
# `probe` is an autocommit psycopg connection.
LOCK_PROBES = """
import time
import psycopg

def lock_waiters(probe):
    waiting = 0
    for _ in range(200):
        waiting = probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()[0]
        if waiting:
            break
        time.sleep(0.05)
    return waiting

def row_lock(probe, table, pk):
    try:
        with probe.transaction():
            probe.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE NOWAIT", [pk])
        return "free"
    except psycopg.errors.LockNotAvailable:
        return "held"
"""


def run_on_fresh_postgres(script: str, data_dir: Path, *, timeout: float = 300) -> Any:
    """Run `script` in `manage.py shell` against a fresh migrated PostgreSQL database and
    return the JSON the script printed on its last line."""
    import json
    import subprocess

    from tests.support.server import PYTHON, ROOT, base_env

    with fresh_postgres_database() as url:
        env = base_env(CROWS_DATA_DIR=str(data_dir), DATABASE_URL=url, CROWS_EMBEDDED_WORKER="0")
        run = subprocess.run(
            [PYTHON, "manage.py", "shell", "-v", "0", "-c", script],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
        )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])
