"""Flying one sortie: take off, think, land.

Take-off and landing are each one short transaction; the brain call between them holds
no lock. Both lock the FlightGate row, so the count of crows in the air (at most
CROWS_MAX_IN_FLIGHT across the flock) and the hand-over of a freed slot to the oldest
waiting sortie never race. On PostgreSQL the row carries that count: a take-off counts
itself in, and a landing out, in the one statement that locks the row (`_count_in`,
`free_slot`); on SQLite the rows are counted under the write lock. A sortie that finds no
slot waits (it is never dropped); a sortie whose flight would overrun the item's or the
list's token budget does not take off, and its item is skipped with reason `budget`. A
budget holds the estimate of every flight in the air and the real count of every landed
one.

The gate is the flock's one shared row, so it is taken last, just before the few writes
that count or hand over a slot, and held only until the commit: a transaction locks its
own rows (list, item, sortie) and does the rest of its work (verdicts, progress, events)
before it queues at the gate, so take-offs and landings of different lists run side by
side on PostgreSQL (holding it for the whole transaction was most of the workers' time
there, docs/PERFORMANCE.md). A gate holder never waits for a row lock: it writes only
rows it already holds and new ones, and the hand-over skips waiting sorties another
transaction has locked (those are taking off themselves, and will find the slot once the
holder commits), so the gate is in no deadlock cycle. Decisions under the gate see every
earlier holder's commit: each statement in READ COMMITTED reads a fresh snapshot, taken
after the lock was granted, and an UPDATE that waited for the gate's row reads its
newest version.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Exists, F, OuterRef, Subquery
from django.db.models.functions import JSONObject
from django.utils import timezone

from flock.actions import record_flight
from flock.brains import BrainReply, BrainRequest, get_brain, prompt_text
from flock.db import lock_or_create, save_fields
from flock.events import after_events, batched, emit, statement_with_events
from flock.models import Crow
from flock.worker import live_runs
from nests.actions.lists import briefs, queue
from nests.actions.lists.banter import maybe_start_banter
from nests.actions.lists.ending import BUDGET, FAILURE, maybe_finish, skip_item
from nests.actions.lists.progress import after_elder_landed, after_worker_landed
from nests.actions.lists.reservations import TAKE_OFF_LOADS
from nests.actions.lists.sorties import BOOT_ID, cancel_unflown, queue_sortie
from nests.actions.lists.triage import ask_jev, conclude_triage
from nests.models import FlightGate, Item, Sortie, TodoList
from nests.payloads import CrowFlying, CrowLanded
from trust.actions.locking import lock_event_log

log = logging.getLogger("crows.lists")



def lock_gate() -> FlightGate | None:
    """Lock the flight gate until the commit; call it after every other row lock the
    transaction takes (see the module's docstring). On PostgreSQL returns its row as it
    is once locked, with the counts it carries (FlightGate).

    On SQLite this reads nothing: every transaction there is IMMEDIATE (crows_site
    settings), holding the database's one write lock from its BEGIN to its commit, so
    whoever counts or hands over slots already holds them all. Locking the gate's row
    was two statements in every flight that guarded nothing."""
    lock_event_log()
    if connection.vendor == "postgresql":
        return lock_or_create(FlightGate, pk=1)
    return None


def lock_sortie(sortie_pk: int, **annotations: Any) -> tuple[Sortie, TodoList, Item]:
    """Lock a sortie with its list and item, in one statement and in the lists' one
    order: the list's row first (as lock_list everywhere), then the item, then the
    sortie. Landing a sortie can touch its siblings (cancel them, queue the Elder), so a
    take-off that locked its own sortie before the list could deadlock with it.

    PostgreSQL takes a `FOR UPDATE OF` statement's row locks in the order the `OF` list
    names the tables, each after the one before is granted, and hands back the rows as
    they are once locked (READ COMMITTED re-reads a row that changed while it waited): the
    same as three `SELECT … FOR UPDATE`s in that order, in one round trip instead of
    three. PostgreSQL's manual does not promise that
    order; its source keeps it, and tests/scaleout/test_flight_round_trips.py checks it.

    `annotations` are read in the same statement; on PostgreSQL a subquery among them
    reads the snapshot taken before the locks were granted (see reservations.py)."""
    sortie = (
        Sortie.objects.select_related("todo_list", "item")
        .select_for_update(of=("todo_list", "item", "self"))
        .annotate(crow_row=_CROW_ROW, **annotations)
        .get(pk=sortie_pk)
    )
    todo, item = sortie.todo_list, sortie.item
    item.todo_list = todo
    return sortie, todo, item


# The sortie's crow, read in the statement that locks the sortie (a take-off needs its
# persona and brain: one statement less per flight). The crow's row is not locked, as it
# was not when it was read on its own; a crow is not a row a flight decides from.
_CROW_FIELDS = [f for f in Crow._meta.concrete_fields]
_CROW_ROW = Subquery(
    Crow.objects.filter(name=OuterRef("crow")).values(row=JSONObject(**{f.attname: f.attname for f in _CROW_FIELDS}))[:1]
)


def crow_of(sortie: Sortie) -> Crow:
    """The sortie's crow: from the row lock_sortie read with it, else from its table."""
    row = getattr(sortie, "crow_row", None)
    if not isinstance(row, dict):
        return Crow.objects.get(name=sortie.crow)
    return _from_json(Crow, row, sortie._state.db)


def _from_json[M: models.Model](model: type[M], row: dict[str, Any], db: str | None) -> M:
    """A row of `model` read as a JSON object (its concrete fields by attname)."""
    fields = list(model._meta.concrete_fields)
    values = []
    for field in fields:
        value = row.get(field.attname)
        # SQLite's json_object() gives a JSON column as its text, a boolean as 0 or 1 and
        # a date as naive UTC text; PostgreSQL's gives them as JSON and ISO 8601.
        if isinstance(field, models.JSONField) and isinstance(value, str):
            value = json.loads(value)
        elif value is not None and not isinstance(field, models.JSONField):
            value = field.to_python(value)
            if isinstance(value, datetime) and timezone.is_naive(value):
                value = timezone.make_aware(value, UTC)
        values.append(value)
    return model.from_db(db, [f.attname for f in fields], values)


def _json_object(model: type[models.Model], table: str) -> tuple[str, list[str]]:
    """SQLite's `json_object(…)` of a row of `model` named `table` in the query."""
    q = connection.ops.quote_name
    fields = list(model._meta.concrete_fields)
    return (f"json_object({', '.join(f'%s, {table}.{q(f.column or f.attname)}' for f in fields)})",
            [f.attname for f in fields])


def _field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field


def _land_returning(sortie_pk: int, values: dict[str, Any]) -> tuple[Sortie, TodoList, Item] | None:
    """SQLite: land the sortie (write `values`) if it is FLYING under this process, in one
    `UPDATE … RETURNING` that hands back the sortie, its item, its list and its crow, and
    what the landing's next step decides from: whether a sortie waits for a slot
    (`any_waiting`), whether another item of the list is open (`others_open`, for
    after_item_ended), whether another worker of the item's attempt is up and whether one
    came back with an answer (`workers_up`, `workers_good`, for after_worker_landed), and
    the Elder's name (on the item, for after_worker_landed to call it in). What
    lock_sortie, the sortie's write and those reads were, in one statement. None when it
    was not this process's to land.

    Every SQLite transaction holds the write lock from its BEGIN, so what it reads is
    exact. PostgreSQL reads them after its locks instead: a subquery of the locking
    statement reads the snapshot taken before it waited, and would miss a sibling that
    landed meanwhile."""
    q = connection.ops.quote_name
    table = q(Sortie._meta.db_table)
    sets, set_params = _sortie_sets(values)
    sortie_json, sortie_keys = _json_object(Sortie, table)
    item_json, item_keys = _json_object(Item, "i")
    list_json, list_keys = _json_object(TodoList, "l")
    crow_json, crow_keys = _json_object(Crow, "c")
    attempt = f"(SELECT a.{q('attempt')} FROM {q(Item._meta.db_table)} a WHERE a.{q('id')} = {table}.{q('item_id')})"
    siblings = (f"FROM {table} w WHERE w.{q('item_id')} = {table}.{q('item_id')} AND w.{q('attempt')} = {attempt}"
                f" AND w.{q('role')} = %s AND w.{q('id')} <> {table}.{q('id')}")
    S = Sortie.Status
    sql = (
        f"UPDATE {table} SET {sets} WHERE {q('id')} = %s AND {q('status')} = %s AND {q('claimed_by')} = %s"
        f" RETURNING {sortie_json},"
        f" (SELECT {item_json} FROM {q(Item._meta.db_table)} i WHERE i.{q('id')} = {table}.{q('item_id')}),"
        f" (SELECT {list_json} FROM {q(TodoList._meta.db_table)} l WHERE l.{q('id')} = {table}.{q('todo_list_id')}),"
        f" (SELECT {crow_json} FROM {q(Crow._meta.db_table)} c WHERE c.{q('name')} = {table}.{q('crow')}"
        f" ORDER BY c.{q('id')} LIMIT 1),"
        f" EXISTS (SELECT 1 FROM {table} w WHERE w.{q('status')} = %s),"
        f" EXISTS (SELECT 1 FROM {q(Item._meta.db_table)} o WHERE o.{q('todo_list_id')} = {table}.{q('todo_list_id')}"
        f" AND o.{q('stage')} NOT IN (%s, %s) AND o.{q('id')} <> {table}.{q('item_id')}),"
        f" EXISTS (SELECT 1 {siblings} AND w.{q('status')} NOT IN (%s, %s)),"
        f" EXISTS (SELECT 1 {siblings} AND w.{q('status')} = %s AND w.{q('ok')}),"
        f" (SELECT e.{q('name')} FROM {q(Crow._meta.db_table)} e WHERE e.{q('role')} = %s ORDER BY e.{q('id')} LIMIT 1)"
    )
    params = [
        *set_params, sortie_pk, S.FLYING, BOOT_ID,
        *sortie_keys, *item_keys, *list_keys, *crow_keys,
        S.WAITING, *Item.ENDED,
        Sortie.Role.WORKER, S.LANDED, S.CANCELLED,
        Sortie.Role.WORKER, S.LANDED,
        Crow.Role.ELDER,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    sortie, todo, item = _landed(
        json.loads(row[0]), json.loads(row[1]), json.loads(row[2]), json.loads(row[3]) if row[3] else None, row[8]
    )
    sortie.any_waiting, sortie.others_open, sortie.workers_up, sortie.workers_good = (  # type: ignore[attr-defined]
        bool(value) for value in row[4:8]
    )
    return sortie, todo, item


def _land_locking(sortie_pk: int, values: dict[str, Any], tokens: int) -> tuple[Sortie, TodoList, Item] | None:
    """PostgreSQL: lock the sortie with its list and item (lock_sortie's lock, in its
    order), land it (write `values`) if it is FLYING under this process, and count its
    `tokens` on the list, in one statement: a locking `WITH` and two data-modifying ones.
    Hands back sortie, list, item and crow, and the Elder's name on the item (unlocked
    reads, as they were on their own); None when it was not this process's to land.

    The item and list come from the locking `WITH`, which hands back the rows as they are
    once locked (as lock_sortie does); the two UPDATEs check and write the newest
    versions of rows it holds."""
    q = connection.ops.quote_name
    sortie_t, item_t, list_t, crow_t = (q(m._meta.db_table) for m in (Sortie, Item, TodoList, Crow))
    sets, set_params = _sortie_sets(values)
    sql = (
        f"WITH locked AS (SELECT s.{q('id')} AS sortie_id, row_to_json(i) AS item_row, row_to_json(l) AS list_row"
        f" FROM {sortie_t} s JOIN {item_t} i ON i.{q('id')} = s.{q('item_id')}"
        f" JOIN {list_t} l ON l.{q('id')} = s.{q('todo_list_id')}"
        f" WHERE s.{q('id')} = %s FOR UPDATE OF l, i, s),"
        f" landed AS (UPDATE {sortie_t} SET {sets} FROM locked WHERE {sortie_t}.{q('id')} = locked.sortie_id"
        f" AND {sortie_t}.{q('status')} = %s AND {sortie_t}.{q('claimed_by')} = %s RETURNING {sortie_t}.*),"
        f" counted AS (UPDATE {list_t} SET {q('tokens_used')} = {list_t}.{q('tokens_used')} + %s FROM landed"
        f" WHERE {list_t}.{q('id')} = landed.{q('todo_list_id')} RETURNING {list_t}.{q('tokens_used')})"
        f" SELECT row_to_json(landed), locked.item_row, locked.list_row, counted.{q('tokens_used')},"
        f" (SELECT row_to_json(c) FROM {crow_t} c WHERE c.{q('name')} = landed.{q('crow')}"
        f" ORDER BY c.{q('id')} LIMIT 1),"
        f" (SELECT e.{q('name')} FROM {crow_t} e WHERE e.{q('role')} = %s ORDER BY e.{q('id')} LIMIT 1)"
        f" FROM landed, locked, counted"
    )
    params = [sortie_pk, *set_params, Sortie.Status.FLYING, BOOT_ID, tokens, Crow.Role.ELDER]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    sortie, todo, item = _landed(row[0], row[1], row[2], row[4], row[5])
    todo.tokens_used = row[3]
    return sortie, todo, item


def _sortie_sets(values: dict[str, Any]) -> tuple[str, list[Any]]:
    """The `SET` list writing `values` (field name to value) on a sortie, and its parameters."""
    q = connection.ops.quote_name
    fields = {_field(Sortie, name): value for name, value in values.items()}
    sets = ", ".join(f"{q(f.column or f.attname)} = %s" for f in fields)
    return sets, [f.get_db_prep_save(value, connection) for f, value in fields.items()]


def _landed(
    sortie_row: dict[str, Any], item_row: dict[str, Any], list_row: dict[str, Any],
    crow_row: dict[str, Any] | None, elder: str | None,
) -> tuple[Sortie, TodoList, Item]:
    """A landing statement's rows as models, joined as lock_sortie joins them, with the
    crow's row (for crow_of) and the Elder's name (for after_worker_landed) on them."""
    db = connection.alias
    sortie = _from_json(Sortie, sortie_row, db)
    item = _from_json(Item, item_row, db)
    todo = _from_json(TodoList, list_row, db)
    sortie.crow_row = crow_row  # type: ignore[attr-defined]  # crow_of
    item.elder_name = elder  # type: ignore[attr-defined]  # for after_worker_landed
    item.todo_list = todo
    sortie.item, sortie.todo_list = item, todo
    return sortie, todo, item


def in_flight() -> int:
    return Sortie.objects.filter(status=Sortie.Status.FLYING).count()


def hand_over_slots(in_air: int | None = None) -> int:
    """Wake the oldest waiting sorties for the slots now free (gate locked by the caller;
    `in_air` is the gate's count on PostgreSQL, else the rows are counted).

    Looks for waiting sorties before counting the free slots: most landings find none
    waiting, and then one statement is enough. Those found are locked until the commit,
    even the ones there is no slot for, which is harmless: another hand-over skips them
    and anyone else waits for at most this transaction's few remaining statements."""
    # skip_locked: a waiting sortie locked elsewhere is taking off right now (its own
    # transaction waits for the gate behind us); waiting for its row would deadlock.
    waiting = Sortie.objects.filter(status=Sortie.Status.WAITING).order_by("waiting_since", "id")
    limit = settings.CROWS_MAX_IN_FLIGHT
    candidates = list(waiting.select_for_update(skip_locked=True)[:limit])
    woken = candidates[: max(0, limit - (in_air if in_air is not None else in_flight()))] if candidates else []
    if in_air is not None and len(woken) == len(candidates) < limit:
        # PostgreSQL: none is left waiting but those woken now, and a sortie skipped as
        # locked is taking off: it flies, or waits again and sets the flag again under
        # the gate's lock, after this commit.
        FlightGate.objects.filter(pk=1).update(waiting=False)
    for sortie in woken:
        sortie.status = Sortie.Status.PLANNED
        sortie.save(update_fields=["status"])
        queue_sortie(sortie)
    return len(woken)


def recount_gate() -> int:
    """PostgreSQL, gate locked by the caller: count the flights in the air and whether any
    sortie waits from the rows again (start-up recovery); returns the count. A statement
    after the gate's lock, so it counts every flight that took off or landed before."""
    FlightGate.objects.filter(pk=1).update(
        in_air=TAKE_OFF_LOADS["in_air"], waiting=Exists(Sortie.objects.filter(status=Sortie.Status.WAITING)),
    )
    return FlightGate.objects.values_list("in_air", flat=True).get(pk=1)


def _count_in(sortie: Sortie, todo: TodoList, estimate: int, flying: dict[str, Any]) -> bool:
    """PostgreSQL: take off, in one statement, when a slot is free and the item's and the
    list's budgets hold the estimate: count the flight in on the gate's row (which locks
    it) and write the sortie's `flying` fields. False when it changed nothing (gate full,
    a budget overrun, or no gate row yet: the caller then locks the gate and looks which).

    Its WHERE reads the gate's newest `in_air` (an UPDATE that waited for the row checks
    it again on the row's newest version) and the budgets' sums from its own snapshot,
    taken after lock_sortie's statement was granted the list's row: every change of a
    list's flights takes that lock first (reservations.py), so the sums are exact. The
    sortie's row is this transaction's already (lock_sortie), so the gate is still the
    last lock it takes."""
    loads = Sortie.objects.filter(pk=sortie.pk).annotate(
        item_load=TAKE_OFF_LOADS["item_load"], list_reserved=TAKE_OFF_LOADS["list_reserved"]
    ).values("item_load", "list_reserved")
    loads_sql, loads_params = loads.query.sql_with_params()
    fields = {_field(Sortie, name): value for name, value in flying.items()}
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH gate AS (UPDATE {q(FlightGate._meta.db_table)} SET {q('in_air')} = {q('in_air')} + 1"
            f" WHERE {q('id')} = 1 AND {q('in_air')} < %s AND EXISTS (SELECT 1 FROM ({loads_sql}) loads"
            f" WHERE loads.{q('item_load')} + %s <= %s AND loads.{q('list_reserved')} + %s <= %s)"
            f" RETURNING {q('in_air')})"
            f" UPDATE {q(Sortie._meta.db_table)} SET {', '.join(f'{q(f.column or f.attname)} = %s' for f in fields)}"
            f" WHERE {q('id')} = %s AND EXISTS (SELECT 1 FROM gate) RETURNING {q('id')}",
            [settings.CROWS_MAX_IN_FLIGHT, *loads_params, estimate, settings.CROWS_ITEM_TOKEN_BUDGET,
             todo.tokens_used + estimate, todo.token_budget,
             *(f.get_db_prep_save(value, connection) for f, value in fields.items()), sortie.pk],
        )
        return cursor.fetchone() is not None


def _count_out_sql() -> str:
    """PostgreSQL: count a landing out on the gate's row (which locks it), returning the
    flights still in the air and whether a sortie may wait; no row when there is no gate."""
    q = connection.ops.quote_name
    return (f"UPDATE {q(FlightGate._meta.db_table)} SET {q('in_air')} = GREATEST({q('in_air')} - 1, 0)"
            f" WHERE {q('id')} = 1 RETURNING {q('in_air')}, {q('waiting')}")


def free_slot(*, landed: bool, any_waiting: bool | None = None) -> None:
    """After a landing (`landed`: a FLYING sortie left the air) or an abort: hand the slot
    to a waiting sortie, if any. Takes the gate: call it after every other row lock.

    SQLite: `any_waiting` (read with the landing's locks) False hands nothing over. On
    PostgreSQL the landing is counted out and the gate says whether any sortie may wait,
    in one statement, written with the landing's events as their INSERT's last part
    (flock.events.statement_with_events: the gate is the transaction's last lock, and a
    statement less); only then, and only if the gate says so, is a waiting sortie looked
    for."""
    if connection.vendor != "postgresql":
        if any_waiting is None or any_waiting:
            lock_gate()
            hand_over_slots()
        return
    if not landed:
        gate = lock_gate()
        assert gate is not None
        if gate.waiting:
            hand_over_slots(gate.in_air)
        return
    counted = statement_with_events(_count_out_sql(), [])

    def hand_over() -> None:
        if counted.row is None:  # no gate row yet
            gate = lock_gate()
            assert gate is not None
            in_air, waiting = gate.in_air, gate.waiting
        else:
            in_air, waiting = int(counted.row["in_air"]), bool(counted.row["waiting"])
        if waiting:
            hand_over_slots(in_air)

    after_events(hand_over)


class Launch(NamedTuple):
    """A sortie in the air, what it was asked, and the brain that answers (the crow's)."""

    sortie: Sortie
    request: BrainRequest
    brain_spec: str


def request_for(sortie: Sortie, item: Item, crow: Crow | None = None) -> BrainRequest:
    """The brain request of a sortie, rebuilt the same way on a take-over after restart."""
    crow = crow or Crow.objects.get(name=sortie.crow)
    context: dict[str, Any] = {"item_text": item.text}
    if sortie.role != Sortie.Role.SENTRY:
        context.update(task_type=item.task_type, mode=item.mode or "solo")
    if sortie.subtask:
        context["subtask"] = sortie.subtask
    if item.owner_note and sortie.attempt == item.attempt:
        # A retry's note goes to every crow of the attempt, the Sentry included.
        context["owner_note"] = item.owner_note
    if sortie.role == Sortie.Role.ELDER:
        context["parts"] = [
            {"crow": s.crow, "text": s.text, **({"subtask": s.subtask} if s.subtask else {})}
            for s in item.sorties.filter(attempt=item.attempt, role=Sortie.Role.WORKER, status=Sortie.Status.LANDED, ok=True).order_by("n", "id")
        ]
    return briefs.brief(crow, task=sortie.task, context=context)


def budget_skip_pending(item: Item) -> bool:
    """A sortie of the item could not take off for the budget while others were in the
    air: the item is skipped when they have landed, and nothing more of it flies."""
    return not item.ended and item.skip_reason == BUDGET


def _in_air_for(item: Item) -> bool:
    return Sortie.objects.filter(item=item, attempt=item.attempt, status=Sortie.Status.FLYING).exists()


def _loads(sortie: Sortie) -> tuple[int, int]:
    """The item's tokens (landed and reserved) and the list's reservations, in one
    statement (PostgreSQL: after the list's and the gate's locks)."""
    row = Sortie.objects.filter(pk=sortie.pk).annotate(
        item_load=TAKE_OFF_LOADS["item_load"], list_reserved=TAKE_OFF_LOADS["list_reserved"]
    )
    item_load, list_reserved = row.values_list("item_load", "list_reserved").get()
    return item_load, list_reserved


def _over_budget(todo: TodoList, estimate: int, *, item_load: int, list_reserved: int) -> bool:
    item_after = item_load + estimate
    list_after = todo.tokens_used + list_reserved + estimate
    return item_after > settings.CROWS_ITEM_TOKEN_BUDGET or list_after > todo.token_budget


class InAir:
    """The sorties this process's threads are flying right now, from take-off to landing.

    A sortie FLYING under this process's id is either here (a sibling thread has it in
    the air: a duplicate task leaves it alone) or was dropped by its thread: its landing
    failed, and so did everything after it, as when the database went away mid-flight.
    Its task then comes back (a retry, or a re-run once its lease ran out) and must fly it
    again, as it would a dead process's, or the sortie would stay in the air until a
    restart and its list would never finish."""

    def __init__(self) -> None:
        self._pks: set[int] = set()
        self._lock = threading.Lock()

    def take(self, pk: int) -> None:
        with self._lock:
            self._pks.add(pk)

    def release(self, pk: int) -> None:
        with self._lock:
            self._pks.discard(pk)

    def __contains__(self, pk: object) -> bool:
        with self._lock:
            return pk in self._pks

    def clear(self) -> None:
        """Forget every flight (tests: each test's database starts afresh)."""
        with self._lock:
            self._pks.clear()


IN_AIR = InAir()


def launch_sortie(sortie_pk: int, *, run_id: str | None = None) -> Launch | None:
    """Take off, or wait for a slot, or cancel. Returns what to fly when this process
    should fly it now, else None; a sortie returned is in IN_AIR until the caller
    releases it. `run_id` is the task run flying it, if any."""
    taken = False
    try:
        with transaction.atomic():
            launch = _launch(sortie_pk, run_id=run_id)
            if launch is not None:
                # Before the commit: a duplicate task waiting for the sortie's row lock
                # finds it taken once it gets the row.
                IN_AIR.take(sortie_pk)
                taken = True
    except BaseException:
        if taken:  # the take-off did not commit
            IN_AIR.release(sortie_pk)
        raise
    return launch


def _launch(sortie_pk: int, *, run_id: str | None = None) -> Launch | None:
    # SQLite: the take-off's loads come with its locks, exact under the write lock its
    # transaction holds from BEGIN; PostgreSQL reads them after the gate (_loads).
    exact_with_locks = connection.vendor != "postgresql"
    sortie, todo, item = lock_sortie(sortie_pk, **(TAKE_OFF_LOADS if exact_with_locks else {}))
    if sortie.status == Sortie.Status.FLYING:
        if sortie.claimed_by == BOOT_ID and sortie_pk in IN_AIR:
            return None  # in the air in a sibling thread of this process
        if sortie.claimed_by != BOOT_ID and live_runs(queue.fly_sortie_task(), sortie_pk, besides=run_id):
            # In the air in another process that is alive (its run's lease is being
            # renewed): this run is a duplicate, as a start-up recovery beside live
            # db_workers queues. Taking over would call the brain a second time.
            return None
        # Left in the air by a dead process, or dropped by this process's thread
        # (see InAir): fly it again, without a second take-off.
        sortie.claimed_by = BOOT_ID
        sortie.save(update_fields=["claimed_by"])
        crow = crow_of(sortie)
        return Launch(sortie, request_for(sortie, item, crow), crow.brain_spec)
    if sortie.status not in (Sortie.Status.PLANNED, Sortie.Status.WAITING):
        return None
    if item.ended or budget_skip_pending(item):
        sortie.status = Sortie.Status.CANCELLED
        sortie.save(update_fields=["status"])
        return None
    crow = crow_of(sortie)
    request = request_for(sortie, item, crow)
    estimate = briefs.estimate(request)
    # In the air with its estimate: that is its reservation on item and list.
    flying = {"status": Sortie.Status.FLYING, "claimed_by": BOOT_ID, "estimate": estimate,
              "started_at": timezone.now()}
    if not exact_with_locks and _count_in(sortie, todo, estimate, flying):
        for name, value in flying.items():
            setattr(sortie, name, value)
        return _take_off(sortie, todo, item, request, crow)
    gate = lock_gate()
    if gate is None:  # SQLite: read with the locks
        in_air, item_load, list_reserved = sortie.in_air, sortie.item_load, sortie.list_reserved  # type: ignore[attr-defined]
    else:
        in_air = gate.in_air
        item_load, list_reserved = _loads(sortie)
    if in_air >= settings.CROWS_MAX_IN_FLIGHT:
        sortie.status = Sortie.Status.WAITING
        sortie.waiting_since = sortie.waiting_since or timezone.now()
        sortie.save(update_fields=["status", "waiting_since"])
        if gate is not None and not gate.waiting:
            gate.waiting = True
            gate.save(update_fields=["waiting"])
        return None
    if _over_budget(todo, estimate, item_load=item_load, list_reserved=list_reserved):
        sortie.status = Sortie.Status.CANCELLED
        sortie.estimate = estimate
        sortie.save(update_fields=["status", "estimate"])
        if _in_air_for(item):
            # The item ends only after its flights (docs/LISTS.md): skipped for the budget
            # once the crows already in the air have landed (land_sortie).
            item.skip_reason = BUDGET
            item.save(update_fields=["skip_reason"])
        else:
            skip_item(item, reason=BUDGET)
        return None
    if gate is not None:
        FlightGate.objects.filter(pk=1).update(in_air=F("in_air") + 1)
    for name, value in flying.items():
        setattr(sortie, name, value)
    sortie.save(update_fields=list(flying))
    return _take_off(sortie, todo, item, request, crow)


def _take_off(sortie: Sortie, todo: TodoList, item: Item, request: BrainRequest, crow: Crow) -> Launch:
    """The sortie is written FLYING: say so."""
    emit(
        "crow.flying",
        CrowFlying(item_id=item.item_id, crow=sortie.crow, borrowed=sortie.borrowed),
        list_id=todo.list_id,
    )
    return Launch(sortie, request, crow.brain_spec)


def land_sortie(
    sortie_pk: int,
    reply: BrainReply,
    *,
    jev: dict[str, Any] | None = None,
    request: BrainRequest | None = None,
) -> Sortie | None:
    """Land the sortie with what its brain said, count its real tokens, hand its slot on
    and move its item along. None when it was not this process's to land. `request` is
    what the crow was asked (rebuilt from the rows when not given), for the flight log."""
    # SQLite: the landing is one UPDATE … RETURNING that also reads whether a sortie waits
    # for a slot and what the next step decides from (_land_returning), and a landing that
    # finds none waiting hands nothing over. PostgreSQL: one statement locks, lands and
    # counts the tokens (_land_locking), and the rest is read after it.
    waiting_known = connection.vendor != "postgresql"
    tokens = max(0, int(reply.tokens_in)) + max(0, int(reply.tokens_out))
    error = "" if reply.ok else (reply.error or "the crow came back with nothing")
    # Landed, its estimate no longer reserves anything, and its tokens count on the item as
    # its sortie's (reservations.py).
    landing = {"status": Sortie.Status.LANDED, "ok": reply.ok, "text": reply.text if reply.ok else "",
               "error": error, "tokens": tokens, "landed_at": timezone.now()}
    with transaction.atomic(), batched():
        if waiting_known:
            found = _land_returning(sortie_pk, landing)
            if found is None:
                return None
            sortie, todo, item = found
            item.others_open = sortie.others_open  # type: ignore[attr-defined]  # for after_item_ended
            todo.tokens_used += tokens
            save_fields((todo, ["tokens_used"]))
        else:
            found = _land_locking(sortie_pk, landing, tokens)
            if found is None:
                return None
            sortie, todo, item = found
        record_flight(
            crow=sortie.crow, provider=reply.provider, model=reply.model, task=sortie.task,
            ok=reply.ok, tokens_in=reply.tokens_in, tokens_out=reply.tokens_out,
            latency_ms=reply.latency_ms, error=error, task_type=item.task_type,
            list_id=todo.list_id, item_id=item.item_id, prompt=prompt_text(request or request_for(sortie, item)),
            with_events=True,
        )
        landed = CrowLanded(item_id=item.item_id, crow=sortie.crow, ok=reply.ok, tokens=tokens)
        if not reply.ok:
            landed["error"] = error
        emit("crow.landed", landed, list_id=todo.list_id)

        if budget_skip_pending(item):
            if not _in_air_for(item):
                skip_item(item, reason=BUDGET)
        elif not item.ended:
            if sortie.role == Sortie.Role.SENTRY:
                conclude_triage(item, reply=reply, jev=jev or {})
            elif sortie.role == Sortie.Role.WORKER:
                if reply.ok:
                    maybe_start_banter(todo, item=item, speaker=crow_of(sortie))
                after_worker_landed(item, sortie)
            else:
                parts = request.context.get("parts") if request is not None and sortie.attempt == item.attempt else None
                after_elder_landed(item, sortie, parts)
        else:
            maybe_finish(todo)
        free_slot(landed=True, any_waiting=sortie.any_waiting if waiting_known else None)  # type: ignore[attr-defined]
    return sortie


def fly_sortie(sortie_pk: int, *, run_id: str | None = None) -> str:
    """The whole flight of one sortie; what the background task runs (`run_id` is its
    run). Idempotent: a sortie whose flight failed after take-off is flown again by the
    next run (InAir); one in the air in a live process is left to it."""
    launched = launch_sortie(sortie_pk, run_id=run_id)
    if launched is None:
        return "not flown"
    try:
        sortie, request, brain_spec = launched
        reply = get_brain(brain_spec).think(request)
        jev = ask_jev(sortie.item.text) if sortie.role == Sortie.Role.SENTRY else None
        landed = land_sortie(sortie_pk, reply, jev=jev, request=request)
    finally:
        IN_AIR.release(sortie_pk)
    return "landed" if landed else "landed elsewhere"


def abort_sortie(sortie_pk: int, *, error: str) -> None:
    """Last resort when a flight's own code failed: land it as a failure so the item
    still ends; if even that fails, land it bare and skip its item (`failure`)."""
    error = error[:500]
    reply = BrainReply.failed(error)
    try:
        flying = Sortie.objects.filter(pk=sortie_pk, status=Sortie.Status.FLYING, claimed_by=BOOT_ID).exists()
        if flying and land_sortie(sortie_pk, reply, jev={}) is not None:
            return
    except Exception:
        log.exception("could not land sortie %s as a failure; skipping its item", sortie_pk)
    with transaction.atomic():
        sortie, todo, item = lock_sortie(sortie_pk)
        landed = sortie.status == Sortie.Status.FLYING
        if landed:
            sortie.status, sortie.ok, sortie.error = Sortie.Status.LANDED, False, error
            sortie.landed_at = timezone.now()
            sortie.save(update_fields=["status", "ok", "error", "landed_at"])
            emit("crow.landed", CrowLanded(item_id=item.item_id, crow=sortie.crow, ok=False, tokens=0,
                                           error=error), list_id=todo.list_id)
        elif sortie.status in (Sortie.Status.PLANNED, Sortie.Status.WAITING):
            cancel_unflown(item)
        if not item.ended:
            skip_item(item, reason=FAILURE)
        else:
            maybe_finish(todo)
        free_slot(landed=landed)
