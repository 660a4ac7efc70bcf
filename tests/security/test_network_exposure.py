"""Beyond loopback only with an owner token. The non-loopback requests run inside a private
network namespace this test makes (`unshare --net`): lo plus 198.18.0.1, the server on
0.0.0.0 there. No traffic ever goes to an address of this machine other than loopback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.server import DAPHNE, PYTHON, ROOT, base_env, free_port

pytestmark = pytest.mark.live

PROBE = Path(__file__).with_name("netns_probe.py")


def _unshare_command() -> list[str]:
    # As root a plain network namespace is enough; otherwise ask for a user namespace too.
    return ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--net"]


def _can_unshare() -> str:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return "unshare or ip (util-linux, iproute2) is not installed"
    probe = subprocess.run(
        [*_unshare_command(), "ip", "link", "set", "lo", "up"], capture_output=True, text=True, timeout=30
    )
    if probe.returncode != 0:
        return f"this machine does not permit a private network namespace: {probe.stderr.strip()[:200]}"
    return ""


def run_probe(data_dir: Path, **env: str) -> dict:
    reason = _can_unshare()
    if reason:
        pytest.skip(reason)
    full_env = base_env(CROWS_DATA_DIR=str(data_dir), CROWS_EMBEDDED_WORKER="0", **env)
    result = subprocess.run(
        [*_unshare_command(), PYTHON, str(PROBE), DAPHNE, str(free_port()), json.dumps(full_env)],
        cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_without_a_token_a_non_loopback_request_is_refused_and_loopback_still_served(sqlite_template, tmp_path):
    results = run_probe(sqlite_template.fresh_dir(tmp_path.name))
    assert results["loopback"]["state_status"] == 200
    assert results["loopback"]["page_status"] == 200
    second = results["second"]
    assert second["state_status"] == 403
    assert "CROWS_OWNER_TOKEN" in json.loads(second["state_body"])["message"]
    assert second["page_status"] == 403


def test_with_a_token_a_non_loopback_request_with_it_is_served(sqlite_template, tmp_path):
    results = run_probe(
        sqlite_template.fresh_dir(tmp_path.name),
        CROWS_OWNER_TOKEN="namespace-token-0123456789abc",
        ALLOWED_HOSTS="127.0.0.1,198.18.0.1",
    )
    assert results["second"]["state_status"] == 200
    assert results["second_without_token"]["status"] == 401
    assert results["loopback"]["state_status"] == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "198.18.0.1", "::"])
def test_run_sh_with_a_non_loopback_host_and_no_token_stops_with_the_message(host):
    env = base_env(HOST=host)
    result = subprocess.run(
        ["bash", "scripts/run.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode != 0
    assert "CROWS_OWNER_TOKEN" in result.stderr
