"""Settings come from the environment; a bad value stops start-up naming the variable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.server import ROOT, base_env


@pytest.mark.parametrize(
    "name, value",
    [
        ("CROWS_HEARTBEAT_S", "soon"),
        ("CROWS_LIST_TOKEN_BUDGET", "-5"),
        ("CROWS_EMBEDDED_WORKER", "perhaps"),
        ("CROWS_MOCK_FAIL_RATE", "1.5"),
        ("CROWS_TASK_LEASE_S", "0.1"),
        ("DATABASE_URL", "mysql://x@localhost/db"),
        ("REDIS_URL", "http://localhost:6379"),
    ],
)
def test_a_bad_value_stops_start_up_naming_the_variable(tmp_path, name, value):
    env = base_env(CROWS_DATA_DIR=str(tmp_path), **{name: value})
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert name in result.stderr


def test_defaults_work_with_nothing_set(tmp_path):
    env = base_env(CROWS_DATA_DIR=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
