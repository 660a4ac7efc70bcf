"""PostgreSQL's connection pool is sized for the worker threads beside the requests:
every worker thread holds a connection while its task runs, so a pool smaller than the
threads made tasks (and the owner's requests behind them) queue for a connection."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from flock.db import POOL_HEADROOM, POOL_MIN_MAX, pool_size_for
from tests.support.server import ROOT, base_env
from tests.support.services import missing_postgres, run_on_fresh_postgres


def test_the_pool_has_a_connection_per_worker_thread_and_headroom():
    assert pool_size_for(8) == POOL_MIN_MAX  # the defaults keep the pool they had
    assert pool_size_for(32) == 32 + POOL_HEADROOM
    assert pool_size_for(64) == 64 + POOL_HEADROOM


@pytest.mark.parametrize("threads, expected", [("8", POOL_MIN_MAX), ("40", 40 + POOL_HEADROOM)])
def test_the_settings_size_the_pool_from_crows_worker_threads(tmp_path, threads, expected):
    # Settings only: nothing connects, so no PostgreSQL is needed.
    env = base_env(
        CROWS_DATA_DIR=str(tmp_path), CROWS_WORKER_THREADS=threads,
        DATABASE_URL="postgres://nobody@127.0.0.1:1/none",
    )
    code = "from django.conf import settings; import json; print(json.dumps(settings.DATABASES['default']['OPTIONS']))"
    run = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1])["pool"]["max_size"] == expected


REFIT = """
import json
from django.db import connection
from flock.db import fit_pool_to_threads
connection.ensure_connection()
before = connection.pool.max_size
fit_pool_to_threads(50)     # db_worker --threads 50
connection.ensure_connection()
after = connection.pool.max_size
with connection.cursor() as cursor:
    cursor.execute("SELECT 1")
    works = cursor.fetchone()[0] == 1
fit_pool_to_threads(4)      # fewer threads never shrink it
print(json.dumps({"before": before, "after": after, "works": works, "kept": connection.pool.max_size}))
"""


@pytest.mark.scaleout
@pytest.mark.live
def test_db_worker_threads_beyond_the_settings_grow_the_pool(tmp_path):
    why = missing_postgres()
    if why:
        pytest.skip(why)
    result = run_on_fresh_postgres(REFIT, tmp_path)
    assert result == {"before": POOL_MIN_MAX, "after": 50 + POOL_HEADROOM, "works": True, "kept": 50 + POOL_HEADROOM}
