"""The governance settings come from the environment with range checks (README)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.server import ROOT, base_env


@pytest.mark.parametrize(
    "name, value", [("CROWS_DECISION_TIMEOUT_S", "tomorrow"), ("CROWS_DECISION_TIMEOUT_S", "0"),
                    ("CROWS_REPLY_TOKEN_CAP", "0"), ("CROWS_REPLY_TOKEN_CAP", "lots")],
)
def test_a_bad_governance_setting_stops_start_up_naming_it(tmp_path, name, value):
    env = base_env(CROWS_DATA_DIR=str(tmp_path), **{name: value})
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0 and name in result.stderr


def test_the_defaults(settings):
    from crows_site import settings as site

    assert site.CROWS_DECISION_TIMEOUT_S == 86400 and site.CROWS_REPLY_TOKEN_CAP == 4000
