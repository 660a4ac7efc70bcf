"""Statement budgets: what each operation may ask of the database (docs/PERFORMANCE.md).

The operations of bench/statements.py run here in process on the test database (SQLite),
counted exactly by tests/support/statements.py: an owner verdict, an owner nest POST, a
10-item list to a trusted flock with the mock brain, and that list's flights. A count is
deterministic, so this is no timing test: a change that makes an operation ask for more
fails here, with the statements it added beside the ones recorded in
statement_shapes.json (CROWS_WRITE_STATEMENT_SHAPES=1 rewrites that file; do so when a
budget is lowered).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.statements import measure_all

SHAPES = Path(__file__).with_name("statement_shapes.json")

# At or below these, on SQLite. Lower a budget when a change cuts statements; never raise
# one without saying why in the commit.
BUDGETS: dict[str, dict[str, float]] = {
    "owner verdict": {"statements": 9, "round_trips": 11, "transactions": 1},
    "owner post": {"statements": 16, "round_trips": 18, "transactions": 1},
    "owner post, with what it sets off": {"statements": 36, "round_trips": 46},
    "list": {"statements": 481, "round_trips": 615, "transactions": 67},
    "flight": {"statements per flight": 11.0, "round trips per flight": 15.0},
}

def _figures(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        "owner verdict": result["owner verdict"],
        "owner post": result["owner post"],
        "owner post, with what it sets off": result["owner post"]["with what it sets off"],
        "list": result["list"],
        "flight": result["flight"],
    }


def _added(operation: str, shapes: dict[str, int], recorded: dict[str, dict[str, int]]) -> list[str]:
    """The statements `operation` runs more often than when its shapes were recorded."""
    before = recorded.get(operation.split(",")[0], {})
    return [
        f"  +{count - before.get(sql, 0)} (now {count}): {sql}"
        for sql, count in sorted(shapes.items(), key=lambda kv: -kv[1])
        if count > before.get(sql, 0)
    ]


@pytest.mark.django_db(transaction=True)
def test_every_operation_stays_within_its_statement_budget(settings):
    settings.CROWS_LIST_RATE_PER_MIN = 1_000_000
    settings.CROWS_NEST_POST_RATE_PER_MIN = 1_000_000
    result = measure_all()
    if os.environ.get("CROWS_WRITE_STATEMENT_SHAPES") == "1":
        SHAPES.write_text(json.dumps(result["shapes"], indent=1, sort_keys=True) + "\n")
    recorded = json.loads(SHAPES.read_text()) if SHAPES.exists() else {}

    over: list[str] = []
    for operation, figures in _figures(result).items():
        for name, budget in BUDGETS[operation].items():
            if figures[name] > budget:
                over.append(f"{operation}: {figures[name]} {name}, over its budget of {budget}")
                shapes = result["shapes"].get(operation.split(",")[0], {})
                over.extend(_added(operation, shapes, recorded) or ["  (no statement shape ran more often than recorded)"])
    assert not over, "\n".join(over)
