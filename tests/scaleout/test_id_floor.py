"""The id floor on PostgreSQL (flock/events.py, docs/STREAM.md): a transaction that emits
holds one floor, taken before its first id and below every id it takes; a floor taken in
a savepoint that rolls back goes with it, and the next emit takes a new one; readers'
final horizon stays below the open transaction's first id all along."""

from __future__ import annotations

import pytest

from tests.support.services import missing_postgres, run_on_fresh_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

# Every script starts here: floors() lists the id floors held in the database, read
# through a second connection, as a reader sees them in pg_locks. pg_locks shows the whole
# server's locks: only this fresh database's count (another test's transaction on another
# database of the same server holds floors of its own).
PRELUDE = """
import json, os
import psycopg
from django.db import transaction
from typing import TypedDict
from flock.events import FLOOR_KEY_BASE, emit, final_horizon, register_event

# A test-only event: emit checks a payload against its event's TypedDict, and these
# scripts only count ids and floors.
register_event("test.floor", TypedDict("Floor", {"n": int}))

reader = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)

def floors():
    rows = reader.execute(
        "SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks"
        " WHERE locktype = 'advisory' AND objsubid = 1 AND classid >= %s AND classid < %s"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        [FLOOR_KEY_BASE >> 32, (FLOOR_KEY_BASE >> 32) * 2]).fetchall()
    return sorted(r[0] - FLOOR_KEY_BASE for r in rows)

steps = {}
"""

# The floors this transaction holds at each step, the ids taken so far and the horizon.
SCRIPT = PRELUDE + """
with transaction.atomic():
    ids = [emit("test.floor", {"n": n}, nest_id="todo").id for n in range(3)]
    steps["three emits"] = {"floors": floors(), "ids": ids}
    try:
        with transaction.atomic():
            inner = emit("test.floor", {"n": 3}, nest_id="todo").id
            steps["savepoint"] = {"floors": floors(), "ids": [inner]}
            raise RuntimeError("roll the savepoint back")
    except RuntimeError:
        pass
    steps["after rollback"] = {"floors": floors()}
with transaction.atomic():
    with transaction.atomic():
        first = emit("test.floor", {"n": 4}, nest_id="todo").id
        steps["fresh, in a savepoint"] = {"floors": floors(), "ids": [first]}
    steps["savepoint released"] = {"floors": floors()}
    try:
        with transaction.atomic():
            emit("test.floor", {"n": 5}, nest_id="todo")
            raise RuntimeError("roll back an inner one")
    except RuntimeError:
        pass
    later = emit("test.floor", {"n": 6}, nest_id="todo").id
    steps["outer floor kept"] = {"floors": floors(), "ids": [later], "horizon": final_horizon()}
steps["committed"] = {"floors": floors()}
# Whether or not an emit took the floor, it stores what the stream sends.
from flock.events import render_frame
from flock.models import Event
stored = {e.id: render_frame(e.id, e.name, e.payload).decode() for e in Event.objects.filter(id__in=ids + [first, later])}
steps["stored"] = [stored[i] for i in ids + [first, later]]
print(json.dumps(steps))
"""


def test_one_floor_per_transaction_below_its_ids_and_savepoint_rollbacks_release_theirs(tmp_path):
    steps = run_on_fresh_postgres(SCRIPT, tmp_path)

    three = steps["three emits"]
    assert len(three["floors"]) == 1 and three["floors"][0] <= min(three["ids"])
    # The inner emit needs no floor of its own: the outer one is below its id.
    assert steps["savepoint"]["floors"] == three["floors"]
    assert steps["after rollback"]["floors"] == three["floors"]

    fresh = steps["fresh, in a savepoint"]
    assert len(fresh["floors"]) == 1 and fresh["floors"][0] <= fresh["ids"][0]
    # Released, not rolled back: PostgreSQL hands the savepoint's lock to the transaction.
    assert steps["savepoint released"]["floors"] == fresh["floors"]
    kept = steps["outer floor kept"]
    assert kept["floors"] == fresh["floors"] and kept["floors"][0] <= kept["ids"][0]
    # Readers trust nothing from the open transaction's first id on.
    assert kept["horizon"] < fresh["ids"][0]
    assert steps["committed"]["floors"] == []
    stored = steps["stored"]
    assert [frame.split("\n")[0] for frame in stored] == [f"id: {i}" for i in three["ids"] + fresh["ids"] + kept["ids"]]
    for frame, n in zip(stored, [0, 1, 2, 4, 6], strict=True):
        assert f'"n":{n}' in frame and '"nest_id":"todo"' in frame and '"ts":"' in frame


SAVEPOINT_FIRST = PRELUDE + """
with transaction.atomic():
    try:
        with transaction.atomic():
            emit("test.floor", {"n": 1}, nest_id="todo")
            steps["in savepoint"] = floors()
            raise RuntimeError("roll back the first emit")
    except RuntimeError:
        pass
    steps["rolled back"] = floors()
    later = emit("test.floor", {"n": 2}, nest_id="todo").id
    steps["next emit"] = {"floors": floors(), "id": later}
print(json.dumps(steps))
"""


def test_a_floor_rolled_back_with_its_savepoint_is_taken_again_by_the_next_emit(tmp_path):
    steps = run_on_fresh_postgres(SAVEPOINT_FIRST, tmp_path)

    assert len(steps["in savepoint"]) == 1
    assert steps["rolled back"] == []
    again = steps["next emit"]
    assert len(again["floors"]) == 1 and again["floors"][0] <= again["id"]


ONE_STATEMENT = PRELUDE + """
from django.db import connection
from django.test.utils import CaptureQueriesContext
with transaction.atomic(), CaptureQueriesContext(connection) as seen:
    ids = [emit("test.floor", {"n": n}, nest_id="todo").id for n in range(3)]
    held = floors()
from flock.models import Event
rows = list(Event.objects.filter(id__in=ids).order_by("id").values("id", "name", "nest_key", "payload"))
print(json.dumps({"statements": [q["sql"] for q in seen.captured_queries], "held": held, "ids": ids,
                  "rows": rows}))
"""


def test_the_floor_rides_on_the_transactions_first_insert(tmp_path):
    result = run_on_fresh_postgres(ONE_STATEMENT, tmp_path)

    # Three emits, three statements (the sequence's name is looked up once per process).
    inserts = [sql for sql in result["statements"] if "INSERT" in sql]
    assert len(inserts) == 3
    assert "pg_advisory_xact_lock_shared" in inserts[0]
    assert not any("pg_advisory" in sql for sql in inserts[1:])
    assert not any("pg_advisory" in sql and "INSERT" not in sql for sql in result["statements"])
    assert len(result["held"]) == 1 and result["held"][0] <= min(result["ids"])
    assert [r["id"] for r in result["rows"]] == result["ids"]
    for row, n in zip(result["rows"], range(3), strict=True):
        assert row["name"] == "test.floor" and row["nest_key"] == "todo"
        assert row["payload"]["n"] == n and row["payload"]["nest_id"] == "todo"
