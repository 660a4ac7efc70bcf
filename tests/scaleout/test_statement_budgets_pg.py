"""Statement budgets on PostgreSQL: tests/nests/test_statement_budgets.py pins SQLite's
counts in the suite; this pins PostgreSQL's (docs/PERFORMANCE.md). The same operations
(tests/support/statements.py measure_all) on a fresh PostgreSQL database. A count is
exact, so this is no timing test."""

from __future__ import annotations

import pytest

from tests.support.services import missing_postgres, run_on_fresh_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

SCRIPT = """
import json
from django.conf import settings
from tests.support.statements import measure_all

settings.CROWS_LIST_RATE_PER_MIN = 1_000_000
settings.CROWS_NEST_POST_RATE_PER_MIN = 1_000_000
result = measure_all()
result.pop("shapes")
print(json.dumps(result))
"""

# At or below these, on PostgreSQL. Lower one when a change cuts statements; never raise
# one without saying why in the commit.
BUDGETS: dict[str, dict[str, float]] = {
    "owner verdict": {"statements": 10, "round_trips": 12, "transactions": 1},
    "owner post": {"statements": 18, "round_trips": 20, "transactions": 1},
    "owner post, with what it sets off": {"statements": 35, "round_trips": 45},
    "list": {"statements": 414, "round_trips": 548, "transactions": 67},
    "flight": {"statements per flight": 9.9, "round trips per flight": 13.9},
}


def test_every_operation_stays_within_its_statement_budget_on_postgres(tmp_path):
    result = run_on_fresh_postgres(SCRIPT, tmp_path)

    assert result["vendor"] == "postgresql"
    result["owner post, with what it sets off"] = result["owner post"]["with what it sets off"]
    over = [
        f"{operation}: {result[operation][name]} {name}, over its budget of {budget}"
        for operation, figures in BUDGETS.items()
        for name, budget in figures.items()
        if result[operation][name] > budget
    ]
    assert not over, "\n".join(over) + f"\nmost frequent, flight: {result['flight']['top']}"
