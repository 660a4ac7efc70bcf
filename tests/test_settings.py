"""Settings come from the environment; a bad value stops start-up naming the variable."""

from __future__ import annotations

import re
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
        ("CROWS_BRAIN", "bogus"),
        ("CROWS_BRAIN", "openai:"),
        ("CROWS_BRAIN", "script:/no/such/rules.json"),
        ("CROWS_OPENAI_BASE_URL", "127.0.0.1:11434/v1"),
        ("CROWS_ANTHROPIC_BASE_URL", "ftp://gateway.example"),
        ("CROWS_BRAIN", "script:/dev/zero"),
        ("CROWS_OWNER_TOKEN", "abcde"),
        ("CROWS_SCRIPT_DIR", "/no/such/scripts"),
        ("CROWS_SESSION_DAYS", "0"),
        ("CROWS_AUTH_FAILURES_PER_MIN", "0"),
        ("CROWS_BRAIN_TEST_TIMEOUT_S", "forever"),
    ],
)
def test_a_bad_value_stops_start_up_naming_the_variable(tmp_path, name, value):
    env = base_env(CROWS_DATA_DIR=str(tmp_path), **{name: value})
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    # One line naming it, exit 2: no traceback with the useful line at its end.
    assert result.returncode == 2
    assert result.stderr.startswith("manage.py: ") and name in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr


def start_the_server(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Load the server's ASGI module as daphne does, and say how that went."""
    return subprocess.run(
        [sys.executable, "-c", "import crows_site.asgi"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "setting, line",
    [
        ({"DATABASE_URL": "mysql://x@localhost/db"},
         "so-many-crows: DATABASE_URL must be a sqlite:// or postgres:// URL, got scheme 'mysql'"),
        # A brain that cannot think: checked as the apps load.
        ({"CROWS_BRAIN": "gpt-4o"},
         "so-many-crows: CROWS_BRAIN: Unknown brain provider 'gpt-4o' in 'gpt-4o': use mock, openai:<model>, "
         "anthropic:<model> or script:<path>."),
    ],
)
def test_the_server_also_stops_in_one_line(tmp_path, setting, line):
    result = start_the_server(base_env(CROWS_DATA_DIR=str(tmp_path), **setting))
    assert result.returncode == 2
    assert result.stderr.strip() == line


def test_defaults_work_with_nothing_set(tmp_path):
    env = base_env(CROWS_DATA_DIR=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_a_worker_that_cannot_reach_its_database_stops_in_one_line(tmp_path):
    env = base_env(
        CROWS_DATA_DIR=str(tmp_path), CROWS_EMBEDDED_WORKER="0",
        DATABASE_URL=f"sqlite:///{tmp_path}/no-such-dir/crows.sqlite3",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "db_worker", "--no-reload"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=60,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "CommandError: the database in DATABASE_URL is not answering: unable to open database file"


@pytest.mark.parametrize("command, prefix", [
    (["-c", "import crows_site.asgi"], "so-many-crows: "),
    (["manage.py", "db_worker", "--batch", "--no-reload"], "CommandError: "),
])
def test_an_unmigrated_database_stops_a_server_or_a_worker_in_one_line(tmp_path, command, prefix):
    # daphne started before `manage.py migrate`: said, instead of a traceback naming a table.
    env = base_env(CROWS_DATA_DIR=str(tmp_path), CROWS_EMBEDDED_WORKER="1")
    result = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr
    assert re.fullmatch(
        re.escape(prefix) + r"the database has \d+ migration\(s\) not applied yet: run `manage.py migrate --noinput` first",
        result.stderr.strip(),
    ), result.stderr


def test_a_command_whose_database_does_not_answer_ends_in_one_line(tmp_path):
    env = base_env(CROWS_DATA_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path}/no-such-dir/crows.sqlite3")
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "manage.py: the database in DATABASE_URL is not answering: unable to open database file"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("command, program", [
    (["-c", "import crows_site.asgi"], "so-many-crows"),
    (["manage.py", "db_worker", "--batch", "--no-reload"], "db_worker"),
])
def test_a_redis_that_does_not_answer_is_said_at_start_up_in_one_line_and_the_process_runs_on(
    sqlite_template, tmp_path, command, program
):
    url = f"redis://127.0.0.1:{_free_port()}"  # nothing listens there
    # A copy of the migrated template, not a migration of its own (ten seconds of CPU).
    data = sqlite_template.fresh_dir(f"{tmp_path.name}-redis")
    env = base_env(CROWS_DATA_DIR=str(data), CROWS_EMBEDDED_WORKER="0", REDIS_URL=url)
    result = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "REDIS_URL" in line]
    assert said == [line for line in said if line.startswith(f"{program}: REDIS_URL {url} is not answering")]
    assert len(said) == 1 and "Traceback" not in result.stderr


def test_a_redis_password_stays_out_of_the_start_up_line(tmp_path):
    url = f"redis://:hunter2@127.0.0.1:{_free_port()}/0"
    env = base_env(CROWS_DATA_DIR=str(tmp_path), CROWS_EMBEDDED_WORKER="0", REDIS_URL=url)
    result = start_the_server(env)
    assert result.returncode == 0, result.stderr
    assert "hunter2" not in result.stderr and "redis://:***@127.0.0.1:" in result.stderr


def test_a_real_default_brain_without_a_key_is_said_at_start_up_and_does_not_stop_it(tmp_path):
    env = base_env(CROWS_DATA_DIR=str(tmp_path), CROWS_BRAIN="openai:gpt-test")
    env.pop("OPENAI_API_KEY", None)
    env.pop("CROWS_OPENAI_API_KEY", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "CROWS_BRAIN=openai:gpt-test but no API key is set (CROWS_OPENAI_API_KEY or OPENAI_API_KEY)" in result.stderr
