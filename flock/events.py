"""The one writer of the event log.

`emit` is called only from actions, inside their transaction. The row is the truth; the
publish after commit is only a doorbell for open streams, which read the database on
any doubt. Writers never wait for each other: on PostgreSQL ids may commit out of order,
so readers trust ids only up to `final_horizon()`, the largest id below which no
transaction is still in flight (docs/STREAM.md, "Ordering without a global lock").
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, is_typeddict

from django.db import connection, models, transaction
from django.db.models import Max

from flock.db import mark_saved, queued_on_commit
from flock.models import Event


@dataclass(frozen=True)
class EventType:
    """One event this build can emit: its name and its payload's shape, a TypedDict of
    what the emitting action passes to `emit` (the stream adds `ts`, and `list_id` or
    `nest_id` when the event is on that stream). The TypedDict is the one source of the
    payload's fields: the emit sites build it (so mypy checks them), `emit` refuses a
    payload of another shape, and the contract tests read its keys."""

    name: str
    payload: type
    required: frozenset[str]
    optional: frozenset[str]


# What `emit` adds to every payload: the stream's key, when the event is on a list's or a
# nest's stream, and the time. A payload may name a room in `nest_id` itself (a firehose
# event about a room), so these are allowed beside any payload's own fields.
ENVELOPE_FIELDS = frozenset({"list_id", "nest_id", "ts"})

# Every event this build can emit, by name; /api/state lists the names as capabilities.
# Each app registers its own in its `payloads` module, beside the TypedDicts.
EVENT_TYPES: dict[str, EventType] = {}
EVENT_NAMES: list[str] = []

# Advisory lock keys (int8) of the id floors in-flight writers hold: FLOOR_KEY_BASE + id.
# pg_locks shows an int8 key as classid (high 32 bits) and objid (low 32 bits), objsubid 1.
FLOOR_KEY_BASE = 1 << 48
_SEQUENCES: dict[str, str] = {}


def register_event(name: str, payload: type) -> str:
    """Register event `name` with its payload's TypedDict; returns the name. Registering
    the same name again with another shape is a bug, and says so."""
    if not is_typeddict(payload):
        raise TypeError(f"event {name!r}: its payload must be a TypedDict, not {payload!r}")
    known = EVENT_TYPES.get(name)
    if known is not None and known.payload is not payload:
        raise ValueError(f"event {name!r} is already registered with {known.payload.__qualname__}")
    EVENT_TYPES[name] = EventType(
        name=name,
        payload=payload,
        required=frozenset(payload.__required_keys__),  # type: ignore[attr-defined]
        optional=frozenset(payload.__optional_keys__),  # type: ignore[attr-defined]
    )
    if name not in EVENT_NAMES:
        EVENT_NAMES.append(name)
    return name


def payload_problem(name: str, payload: Mapping[str, Any]) -> str:
    """What is wrong with `payload` as event `name`'s payload, or "": a required field
    missing, or a field its TypedDict does not declare (besides the envelope's)."""
    event = EVENT_TYPES.get(name)
    if event is None:
        return f"unknown event name {name!r}: register it with register_event"
    keys = payload.keys()
    missing = event.required - keys
    unknown = keys - event.required - event.optional - ENVELOPE_FIELDS
    if missing or unknown:
        return (
            f"event {name!r} payload does not match {event.payload.__qualname__}: "
            f"missing {sorted(missing)}, undeclared {sorted(unknown)}"
        )
    return ""


def lock_event_log() -> None:
    """Kept for callers written when the event log had one global lock: ordering no longer
    needs one (docs/STREAM.md), so this does nothing. Row locks still order what they
    guard."""


def _event_sequence() -> str:
    alias = connection.alias
    if alias not in _SEQUENCES:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [Event._meta.db_table])
            _SEQUENCES[alias] = cursor.fetchone()[0]
    return _SEQUENCES[alias]


def _insert_holding_id_floor(events: list[Event], other_rows: list[models.Model], ridings: list[Riding]) -> None:
    """PostgreSQL, a transaction's first events: insert `events` (in their order) and, in
    the same statement, hold a shared transaction lock keyed by a number no larger than
    any id this transaction will take (the sequence's next value, read just before the
    first row takes its id). Shared, so writers never wait for each other; readers see it
    in pg_locks.

    One statement instead of a lock and then an insert: a round trip less in every
    transaction that emits. The floor is taken in a materialized CTE that each inserted
    row is read from, so it is held before the first row's id default (nextval) runs;
    several rows are one `SELECT … FROM floor` each, joined by UNION ALL, which runs its
    branches in order, so their ids follow the list's order.

    `other_rows` (of other tables, inserted with these events: insert_with_events) and
    `ridings` (statement_with_events) go into the same statement, each a data-modifying
    `WITH` of it, the ridings' first rows returned beside each event's id.

    Once per transaction: ids only grow, so the floor taken before the first id is below
    every later one too. A floor taken inside a savepoint that is rolled back is released
    with it, and Django drops the on-commit hooks registered there in the same step, so
    `_floor_held` still being queued means the floor is still held."""
    quote = connection.ops.quote_name
    fields = [f for f in Event._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(quote(f.column or f.attname) for f in fields)  # a concrete field's column is set
    if len(events) == 1:
        row = ", ".join(["%s"] * len(fields))
    else:
        # UNION ALL resolves an untyped parameter as text: each says its column's type.
        row = ", ".join(f"CAST(%s AS {f.db_type(connection)})" for f in fields)
    selects = " UNION ALL ".join([f"SELECT {row} FROM floor"] * len(events))
    values = [f.get_db_prep_save(getattr(event, f.attname), connection) for event in events for f in fields]
    others, other_values = "", []
    for n, other in enumerate(other_rows):
        model = type(other)
        row_fields = [f for f in model._meta.local_concrete_fields if not f.generated and f is not model._meta.auto_field]
        for field in row_fields:
            field.pre_save(other, True)  # auto_now_add and friends
        others += (f", r{n} AS (INSERT INTO {quote(model._meta.db_table)}"
                   f" ({', '.join(quote(f.column or f.attname) for f in row_fields)})"
                   f" VALUES ({', '.join(['%s'] * len(row_fields))}))")
        other_values += [f.get_db_prep_save(getattr(other, f.attname), connection) for f in row_fields]
    riding_values: list[Any] = []
    for n, riding in enumerate(ridings):
        others += f", w{n} AS ({riding.sql})"
        riding_values += riding.params
    returned = "".join(f", (SELECT row_to_json(w{n}) FROM w{n} LIMIT 1)" for n in range(len(ridings)))
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH floor AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared({FLOOR_KEY_BASE} + last_value"
            f" + CASE WHEN is_called THEN 1 ELSE 0 END) FROM {_event_sequence()}){others}"
            f" INSERT INTO {quote(Event._meta.db_table)} ({columns}) {selects}"
            f" RETURNING {quote('id')}{returned}",
            [*other_values, *riding_values, *values],
        )
        fetched = cursor.fetchall()
        ids = sorted(row[0] for row in fetched)
    for n, riding in enumerate(ridings):
        riding.row, riding.written = fetched[0][1 + n], True
    for event, pk in zip(events, ids, strict=True):
        event.pk = pk
        mark_saved(event)
    transaction.on_commit(_floor_held)


def _insert(events: list[Event], other_rows: list[models.Model], ridings: list[Riding]) -> None:
    """Insert `events` in one statement, their ids in the list's order, and `other_rows`,
    and run `ridings` last (all in that statement on PostgreSQL, when it takes the
    transaction's id floor)."""
    if events and connection.vendor == "postgresql" and not queued_on_commit(_floor_held):
        _insert_holding_id_floor(events, other_rows, ridings)
        return
    _insert_apart(events, other_rows)
    for riding in ridings:
        riding.run()


def _insert_apart(events: list[Event], other_rows: list[models.Model]) -> None:
    by_model: dict[type[models.Model], list[models.Model]] = {}
    for row in other_rows:
        by_model.setdefault(type(row), []).append(row)
    for model, rows in by_model.items():
        model._default_manager.bulk_create(rows)
    if not events:
        return
    if len(events) == 1:
        events[0].save(force_insert=True)
    else:
        # SQLite and PostgreSQL both hand back the ids of a multi-row INSERT in row order.
        Event.objects.bulk_create(events)


def _floor_held() -> None:
    """On-commit marker of a transaction that holds its id floor; does nothing."""


def newest_id_handed_out() -> int:
    """The largest event id the log has ever handed out, committed or not, pruned or not:
    a cursor above it names no event that ever was (the database was reset or restored
    from an older copy). PostgreSQL: the id sequence. SQLite: its AUTOINCREMENT counter,
    which never goes back (a rolled-back id was never sent to anyone)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT last_value - CASE WHEN is_called THEN 0 ELSE 1 END FROM {_event_sequence()}")
        else:
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [Event._meta.db_table])
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def final_horizon() -> int:
    """The largest id H such that every event with an id <= H is final: committed (and
    visible to any read that starts after this returns) or never to exist.

    SQLite: one writer at a time, and a writer's id is above every committed one, so it is
    the newest id. PostgreSQL: V, the last id handed out, read first; then the smallest id
    floor still held (pg_locks). An id g <= V was taken before V was read, so its
    transaction held its floor (<= g) by then; if that transaction were still open, the
    floor would show, and H < floor <= g. So every g <= H belongs to a finished one."""
    if connection.vendor != "postgresql":
        return Event.objects.aggregate(m=Max("id"))["m"] or 0
    newest = newest_id_handed_out()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT min((classid::bigint << 32) | objid::bigint) FROM pg_locks"
            " WHERE locktype = 'advisory' AND objsubid = 1"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND classid >= %s AND classid < %s",
            [FLOOR_KEY_BASE >> 32, (FLOOR_KEY_BASE >> 32) * 2],
        )
        floor = cursor.fetchone()[0]
    if floor is not None:
        newest = min(newest, floor - FLOOR_KEY_BASE - 1)
    return max(newest, 0)


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Published:
    """What the doorbell carries: the rendered frame and the streams it belongs to. Each
    server's hub works out, per stream, the id of the stream's previous event itself,
    releasing events in id order up to the final horizon (flock/stream/hub.py)."""

    id: int
    name: str
    frame: bytes
    keys: tuple[str, ...] = ("*",)


def stream_keys(list_key: str, nest_key: str) -> tuple[str, ...]:
    keys = ["*"]
    if list_key:
        keys.append(f"list:{list_key}")
    if nest_key:
        keys.append(f"nest:{nest_key}")
    return tuple(keys)


def render_frame(event_id: int, name: str, payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return f"id: {event_id}\nevent: {name}\ndata: {data}\n\n".encode()


def in_action_transaction() -> bool:
    """Whether an action's `atomic` block is open. A test's own wrapping transaction (the
    one pytest-django opens around a `db` test, marked `_from_testcase`) does not count:
    it is not there in production, so an action that forgot its own transaction would
    pass its tests and then fail for real."""
    return any(not getattr(block, "_from_testcase", False) for block in connection.atomic_blocks)


class _Batch:
    """Events emitted in a `batched()` block, not yet written."""

    def __init__(self) -> None:
        self.alias = connection.alias
        self.savepoints = _savepoints()
        self.pending: list[tuple[Event, dict[str, Any]]] = []
        self.rows: list[models.Model] = []  # insert_with_events
        self.ridings: list[Riding] = []  # statement_with_events
        self.after: list[Callable[[], object]] = []  # after_events


_batches = threading.local()


def _savepoints() -> tuple[str, ...]:
    return tuple(sid for sid in connection.savepoint_ids if sid)


@contextmanager
def batched() -> Iterator[None]:
    """Write the events emitted in this block together, in one INSERT, when it ends.

    `emit` stays the one writer and keeps its meaning: every event is in the caller's
    transaction, in emit order (ids follow it), published once that commits. Only the
    write waits for the block's end: a landing emits three events on average, and each
    was a statement (docs/PERFORMANCE.md). Open it inside the action's `atomic` block, so
    an error that ends the block rolls back the transaction its events would have joined.
    An event emitted inside a savepoint opened within the block is written at once, after
    those waiting (so the ids keep the emit order), which are then written in that
    savepoint too: code that rolls a savepoint back and carries on should not run in a
    batch after emitting (none does: the pipeline's nested actions take no savepoint).
    `flush()` writes the waiting ones before a read that must see them. Nested blocks
    join the outermost one."""
    if getattr(_batches, "open", None) is not None:
        yield
        return
    _batches.open = _Batch()
    try:
        yield
        flush()
    finally:
        _batches.open = None


def flush() -> None:
    """Write the events a `batched()` block holds (before reading the event log in it)."""
    batch: _Batch | None = getattr(_batches, "open", None)
    if batch is None or batch.alias != connection.alias:
        return
    if batch.pending or batch.rows or batch.ridings:
        pending, batch.pending = batch.pending, []
        rows, batch.rows = batch.rows, []
        ridings, batch.ridings = batch.ridings, []
        _write([event for event, _ in pending], [body for _, body in pending], rows, ridings)
    after, batch.after = batch.after, []
    for callback in after:
        callback()


@dataclass
class Riding:
    """A statement run with a batch's events (statement_with_events): `row` is the first
    row it returned, as a dict of column to value, once `written`."""

    sql: str
    params: list[Any]
    written: bool = False
    row: dict[str, Any] | None = None

    def run(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.params)
            found = cursor.fetchone()
            names = [column.name for column in cursor.description or ()]
        self.row, self.written = (dict(zip(names, found, strict=True)) if found is not None else None), True


def _open_batch() -> _Batch | None:
    """The open batched() block of this connection, unless a savepoint opened within it."""
    batch: _Batch | None = getattr(_batches, "open", None)
    if batch is not None and batch.alias == connection.alias and _savepoints() == batch.savepoints:
        return batch
    return None


def statement_with_events(sql: str, params: list[Any]) -> Riding:
    """Run `sql`, one data-modifying statement with a RETURNING clause, with the events of
    the open `batched()` block, after them: on PostgreSQL as a data-modifying `WITH` of
    their INSERT (when that statement takes the transaction's id floor), a statement
    less; otherwise on its own, when they are written. Outside a block (or inside a
    savepoint opened within one) it runs now. For a write that should be the
    transaction's last (the flight gate's count, nests/actions/lists/flights.py); what it
    returned is read in an after_events callback."""
    riding = Riding(sql, list(params))
    batch = _open_batch()
    if batch is None:
        riding.run()
    else:
        batch.ridings.append(riding)
    return riding


def after_events(callback: Callable[[], object]) -> None:
    """Call `callback` once the open `batched()` block's events (and ridings) are written,
    still inside its transaction; outside a block, now."""
    batch = _open_batch()
    if batch is None:
        callback()
    else:
        batch.after.append(callback)


def unwritten_events(list_key: str) -> list[tuple[str, dict[str, Any]]]:
    """The events of `list_key` the open `batched()` block holds, not yet written, as
    (name, payload) in emit order: a read of the log in the block adds them to what it
    reads instead of writing them first (a statement more)."""
    batch: _Batch | None = getattr(_batches, "open", None)
    if batch is None or batch.alias != connection.alias:
        return []
    return [(event.name, body) for event, body in batch.pending if event.list_key == list_key]


def insert_with_events(row: models.Model) -> None:
    """Insert `row` (a new row of any table: a log line) with the events of the open
    `batched()` block, when they are written: on PostgreSQL in their very INSERT, a
    statement less (a landing's flight-log line, docs/PERFORMANCE.md). Outside a block,
    or inside a savepoint opened within one, it is inserted now. Its id is not set until
    then, and no save signals are sent: for rows nobody reads back in the transaction."""
    batch = _open_batch()
    if batch is not None:
        batch.rows.append(row)
        return
    type(row)._default_manager.bulk_create([row])


class _Doorbell:
    # The stream hub reads the event log (final_horizon, the rows past it), so this module
    # cannot import it: FlockConfig.ready() hands its `publish` to `wire_doorbell`.
    ring: Callable[[Published], None] | None = None


def wire_doorbell(ring: Callable[[Published], None]) -> None:
    _Doorbell.ring = ring


def _publish_on_commit(published: Published) -> None:
    ring = _Doorbell.ring
    if ring is None:
        raise RuntimeError("the event log's doorbell is not wired (FlockConfig.ready wires it)")
    transaction.on_commit(lambda: ring(published))


def _write(
    events: list[Event], bodies: list[dict[str, Any]], other_rows: list[models.Model] | None = None,
    ridings: list[Riding] | None = None,
) -> None:
    _insert(events, other_rows or [], ridings or [])
    for event, body in zip(events, bodies, strict=True):
        published = Published(
            id=event.id,
            name=event.name,
            frame=render_frame(event.id, event.name, body),
            keys=stream_keys(event.list_key, event.nest_key),
        )
        _publish_on_commit(published)


def emit(name: str, payload: Mapping[str, Any], *, list_id: str = "", nest_id: str = "") -> Event:
    """Append one event inside the caller's transaction and publish it once that commits.

    `payload` is the event's TypedDict (registered with its name by `register_event`),
    built at the call site so mypy checks its fields; a payload of another shape is a
    ValueError here, before anything is written.

    `list_id` puts the event on that list's stream (and into its payload, as docs/API.md
    says every list event carries it); `nest_id` likewise for a nest's stream. In a
    `batched()` block the row is written when the block ends (its id is set then).
    """
    if not in_action_transaction():
        raise RuntimeError("emit() must run inside an action's transaction.atomic block")
    problem = payload_problem(name, payload)
    if problem:
        raise ValueError(problem)
    now = datetime.now(UTC)
    body: dict[str, Any] = {}
    if list_id:
        body["list_id"] = list_id
    if nest_id:
        body["nest_id"] = nest_id
    body.update(payload)
    body["ts"] = rfc3339(now)

    event = Event(name=name, list_key=list_id, nest_key=nest_id, payload=body, created_at=now)
    batch: _Batch | None = getattr(_batches, "open", None)
    if batch is not None and batch.alias == connection.alias:
        if _savepoints() == batch.savepoints:
            batch.pending.append((event, body))
            return event
        flush()
    _write([event], [body])
    return event
