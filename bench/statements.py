"""Statements, round trips and transactions per operation, on SQLite and on PostgreSQL.

    .venv/bin/python bench/statements.py [--databases sqlite,postgres] [--json out.json]

Each database is freshly migrated, and the operations run in one `manage.py shell`
process against it, in process (tests/support/statements.py says what is counted):

- an owner verdict: the owner approves an untrusted Sentry's triage of a one-item list;
- an owner nest POST: one owner message in the `todo` nest (the action alone, and then
  everything it queued, run inline);
- a 10-item list (bench/lists.py's mix) posted to a trusted flock, its tasks run inline
  with the mock brain at 0 ms, from the POST to `list.finished`;
- a flight: the take-offs and landings of that list's flights, per flight.

PostgreSQL is 127.0.0.1:5432 (CROWS_TEST_PG_ADMIN, default postgresql://postgres@…/test);
when it does not answer, its column is skipped with the reason. Counts are exact: one run
is enough, and it takes a few seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.server import PYTHON, base_env, migrate  # noqa: E402
from tests.support.services import fresh_postgres_database, missing_postgres  # noqa: E402

SCRIPT = """
import json
from tests.support.statements import measure_all
print(json.dumps(measure_all()))
"""

ENV = {
    "CROWS_EMBEDDED_WORKER": "0",
    "CROWS_NO_WORKER_ON_IMPORT": "1",
    "CROWS_MOCK_LATENCY_MS": "0",
    "CROWS_LIST_RATE_PER_MIN": "1000000",
    "CROWS_NEST_POST_RATE_PER_MIN": "1000000",
}


def run(env: dict[str, str]) -> dict[str, Any]:
    migrate(env)
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-v", "0", "-c", SCRIPT],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(database: str) -> dict[str, Any] | str:
    with tempfile.TemporaryDirectory(prefix="crows-statements-") as data_dir:
        if database == "sqlite":
            return run(base_env(CROWS_DATA_DIR=data_dir, **ENV))
        why = missing_postgres()
        if why:
            return f"skipped: {why}"
        with fresh_postgres_database() as url:
            return run(base_env(CROWS_DATA_DIR=data_dir, DATABASE_URL=url, **ENV))


def line(label: str, counts: dict[str, Any]) -> str:
    return (f"  {label:<32} {counts['statements']:>6} statements {counts['round_trips']:>6} round trips"
            f" {counts['transactions']:>4} transactions {counts['autocommit']:>4} autocommit"
            f" {counts['savepoints']:>4} savepoint queries")


def report(database: str, result: dict[str, Any] | str) -> None:
    print(f"\n== {database}")
    if isinstance(result, str):
        print(f"  {result}")
        return
    flight = result["flight"]
    listed = result["list"]
    print(line("owner verdict", result["owner verdict"]))
    print(line("owner nest POST (action)", result["owner post"]))
    print(line("  with what it sets off", result["owner post"]["with what it sets off"]))
    print(line(f"10-item list ({listed['flights']} flights)", listed))
    n = listed["flights"]
    print(line(f"  take-offs (all {n})", flight["take-off"]))
    print(line(f"  landings (all {n})", flight["landing"]))
    print(f"  per flight: {flight['statements per flight']} statements, {flight['round trips per flight']} round trips")
    for name, top in (("list", listed["top"]), ("flight (all take-offs and landings)", flight["top"]),
                      ("owner verdict", result["owner verdict"]["top"]), ("owner nest POST", result["owner post"]["top"])):
        print(f"  most frequent statements, {name}:")
        for count, sql in top:
            print(f"    {count:>5}  {sql[:150]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--databases", default="sqlite,postgres")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {}
    for database in args.databases.split(","):
        results[database] = measure(database)
        report(database, results[database])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
