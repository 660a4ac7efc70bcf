"""A flight's round trips on PostgreSQL.

- It locks its list, item and sortie in one statement (nests/actions/lists/flights.py
  `lock_sortie`), still in the lists' one lock order: list, then item, then sortie. The
  order is what keeps a take-off from deadlocking with a landing that cancels its
  siblings: a second connection holds the item's row, the flight's lock statement waits
  for it, and meanwhile the list's row is already locked and the sortie's is not.
  PostgreSQL's manual does not promise this order (its source keeps it: the `OF` list's
  order becomes the order its executor locks in), so this test is what guards it.
- It writes its item, list and sortie in one statement (flock.db.save_fields), and a row
  that is gone raises its model's NotUpdated and fails the whole transaction, as
  `save(update_fields=…)` does."""

from __future__ import annotations

import pytest

from tests.support.services import LOCK_PROBES, missing_postgres, run_on_fresh_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

SCRIPT = LOCK_PROBES + """
import json, os, threading
import psycopg
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from nests.actions import post_list
from nests.actions.lists.flights import lock_sortie
from nests.models import Sortie

todo = post_list("milk", requester="ada")
sortie = Sortie.objects.get(todo_list=todo)
url = os.environ["DATABASE_URL"]
steps = {}

with transaction.atomic(), CaptureQueriesContext(connection) as seen:
    locked, locked_list, locked_item = lock_sortie(sortie.pk)
steps["statements"] = len(seen.captured_queries)
steps["rows"] = [locked.pk, locked_list.pk, locked_item.pk, locked_item.todo_list.pk]
steps["expected"] = [sortie.pk, todo.pk, sortie.item_id, todo.pk]

holder = psycopg.connect(url)  # its transaction holds the item's row until rolled back
holder.execute("SELECT 1 FROM nests_item WHERE id = %s FOR UPDATE", [sortie.item_id])
finished = threading.Event()

def fly():
    with transaction.atomic():
        lock_sortie(sortie.pk)
    connection.close()
    finished.set()

flight = threading.Thread(target=fly)
flight.start()
probe = psycopg.connect(url, autocommit=True)
steps["waiting for the item"] = lock_waiters(probe)
steps["list"] = row_lock(probe, "nests_todolist", todo.pk)
steps["sortie"] = row_lock(probe, "nests_sortie", sortie.pk)
steps["finished before the item was let go"] = finished.is_set()
holder.rollback()
flight.join(30)
steps["finished after"] = finished.is_set()
print(json.dumps(steps))
"""


def test_a_flight_locks_list_item_and_sortie_in_one_statement_and_in_the_lists_order(tmp_path):
    steps = run_on_fresh_postgres(SCRIPT, tmp_path)

    assert steps["statements"] == 1
    assert steps["rows"] == steps["expected"]
    assert steps["waiting for the item"] == 1
    # Waiting for the item, the flight already holds its list and not yet its sortie.
    assert steps["list"] == "held"
    assert steps["sortie"] == "free"
    assert not steps["finished before the item was let go"]
    assert steps["finished after"]


SAVE_FIELDS = """
import json
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from flock.db import save_fields
from nests.actions import post_list
from nests.models import Item, Sortie

todo = post_list("milk", requester="ada")
sortie = Sortie.objects.get(todo_list=todo)
item = sortie.item
steps = {}
with transaction.atomic(), CaptureQueriesContext(connection) as seen:
    todo.banter_started, item.attempt, sortie.text = 7, 11, "caw; it's done"
    save_fields((item, ["attempt"]), (todo, ["banter_started"]), (sortie, ["text"]))
steps["statements"] = len(seen.captured_queries)
todo.refresh_from_db(); item.refresh_from_db(); sortie.refresh_from_db()
steps["saved"] = [todo.banter_started, item.attempt, sortie.text]

gone = Item(pk=item.pk + 1000, todo_list=todo)
try:
    with transaction.atomic():
        todo.banter_started = 99
        save_fields((todo, ["banter_started"]), (gone, ["attempt"]))
    steps["error"] = ""
except Item.NotUpdated as exc:
    steps["error"] = str(exc)
todo.refresh_from_db()
steps["after the error"] = todo.banter_started
steps["gone"] = gone.pk
print(json.dumps(steps))
"""


def test_a_flights_row_writes_are_one_statement_and_a_missing_row_rolls_all_back(tmp_path):
    steps = run_on_fresh_postgres(SAVE_FIELDS, tmp_path)

    assert steps["statements"] == 1
    assert steps["saved"] == [7, 11, "caw; it's done"]
    assert steps["error"] == f"save_fields found no Item {steps['gone']} to update"
    assert steps["after the error"] == 7


LANDING = LOCK_PROBES + """
import json, os, threading
import psycopg
from django.db import connection
from flock.brains import BrainReply
from nests.actions import post_list
from nests.actions.lists import land_sortie, launch_sortie
from nests.actions.lists.flights import IN_AIR
from nests.models import Sortie

todo = post_list("milk", requester="ada")
sortie = Sortie.objects.get(todo_list=todo)
launch_sortie(sortie.pk)
IN_AIR.release(sortie.pk)
url = os.environ["DATABASE_URL"]
steps = {}
reply = BrainReply(ok=True, text="done", tokens_in=7, tokens_out=0, provider="mock", model="mock", latency_ms=1)

holder = psycopg.connect(url)  # its transaction holds the item's row until rolled back
holder.execute("SELECT 1 FROM nests_item WHERE id = %s FOR UPDATE", [sortie.item_id])
holder.execute("UPDATE nests_item SET owner_note = 'changed while the landing waited' WHERE id = %s", [sortie.item_id])
landed = {}

def land():
    landed["sortie"] = land_sortie(sortie.pk, reply, jev={})
    connection.close()

landing = threading.Thread(target=land)
landing.start()
probe = psycopg.connect(url, autocommit=True)
steps["waiting for the item"] = lock_waiters(probe)
steps["list"] = row_lock(probe, "nests_todolist", todo.pk)
steps["sortie"] = row_lock(probe, "nests_sortie", sortie.pk)
holder.commit()
landing.join(30)
steps["item as landed"] = landed["sortie"].item.owner_note
steps["tokens"] = type(todo).objects.get(pk=todo.pk).tokens_used
steps["status"] = Sortie.objects.get(pk=sortie.pk).status
steps["again"] = land_sortie(sortie.pk, reply, jev={}) is None
print(json.dumps(steps))
"""


def test_a_landing_locks_list_item_and_sortie_in_the_lists_order_and_reads_them_as_locked(tmp_path):
    """A landing's one statement (flights._land_locking) takes the list, the item and the
    sortie in the lists' order, hands back the item as it is once locked (a change that
    committed while it waited), counts the tokens once, and a second landing does nothing."""
    steps = run_on_fresh_postgres(LANDING, tmp_path)

    assert steps["waiting for the item"] == 1
    assert steps["list"] == "held"
    assert steps["sortie"] == "free"
    assert steps["item as landed"] == "changed while the landing waited"
    assert steps["tokens"] == 7
    assert steps["status"] == "landed"
    assert steps["again"]
