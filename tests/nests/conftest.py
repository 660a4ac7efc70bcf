"""Fixtures the chat-rule tests share."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def script(settings, tmp_path: Path) -> Callable[[list[dict]], Path]:
    """`script(rules)`: every crow thinks with a script: brain running these rules."""

    def install(rules: list[dict]) -> Path:
        path = tmp_path / f"rules-{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps(rules))
        settings.CROWS_BRAIN = f"script:{path}"
        return path

    return install
