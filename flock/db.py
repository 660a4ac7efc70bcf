"""Small database helpers the apps share: transactions, the PostgreSQL connection pool
and telling an outage from a bug."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection, connections, models, transaction
from django.db.models.sql import UpdateQuery
from django.db.utils import InterfaceError, OperationalError

# A request that finds the database away is answered 503 with this, and asked to come
# back after RETRY_AFTER_S (docs/API.md).
DATABASE_AWAY = "the flock's database is not answering right now, so the request was not carried out; try again shortly"
RETRY_AFTER_S = 2

# Connections a process needs beside its worker threads' one each: request threads, the
# stream's database reads, the heartbeat. The pool opens them only when asked.
POOL_HEADROOM = 12
POOL_MIN_MAX = 20


# What a server or a worker says, and stops on, when its database's tables are not
# there yet or are older than its code.
NOT_MIGRATED = "the database has {count} migration(s) not applied yet: run `manage.py migrate --noinput` first"


_migrated = False


def lacks_migrations(exc: BaseException) -> int:
    """For an error a request ran into: how many migrations the database lacks, when that
    explains it (0 otherwise). An outage is not asked about (the database would be waited
    for a second time), and once the database is known to be migrated it is not asked
    again: a migration is never undone under a running server."""
    global _migrated
    from django.db import DatabaseError

    if _migrated or not isinstance(exc, DatabaseError) or database_away(exc):
        return 0
    missing = unapplied_migrations()
    _migrated = missing == 0
    return missing or 0


def unapplied_migrations() -> int | None:
    """How many of the code's migrations the database lacks; None when it does not answer
    (a server then says so per request, with a 503, and a worker waits for it).

    A server or worker on an unmigrated database would otherwise fail on its first query
    with a traceback naming a table, and go on failing every request. Read from the
    migration files' names, as Django's loader finds them, without importing them: a
    worker that loaded the whole migration graph at start ran a few per cent slower in
    bench/lists.py. A squashed migration's replaced ones
    are recorded as applied with it, so they never count as missing."""
    import pkgutil
    from importlib import import_module

    from django.apps import apps
    from django.db import DatabaseError
    from django.db.migrations.recorder import MigrationRecorder

    on_disk = set()
    for app in apps.get_app_configs():
        try:
            package = import_module(f"{app.name}.migrations")
        except ModuleNotFoundError:
            continue
        on_disk |= {
            (app.label, name) for _, name, is_pkg in pkgutil.iter_modules(package.__path__)
            if not is_pkg and name[0] not in "_~"
        }
    try:
        applied = set(MigrationRecorder(connection).applied_migrations())
    except DatabaseError:
        return None
    return len(on_disk - applied)


def queued_on_commit(hook: Callable[[], object]) -> bool:
    """Whether `hook` is queued to run when this transaction commits.

    A hook registered with `transaction.on_commit` inside an `atomic` savepoint that is
    rolled back is dropped with it (Django does so in the same step), so a marker hook
    tells whether what its transaction did at that moment (a lock, a NOTIFY to send)
    survived. Not for savepoints made by hand with `transaction.savepoint()`, whose
    rollback keeps the hooks."""
    return any(entry[1] is hook for entry in connection.run_on_commit)  # (savepoints, hook, robust)


def lock_or_create[M: models.Model](model: type[M], **lookup: Any) -> M:
    """The row matching `lookup`, locked until the commit: one statement when it exists,
    created on first use (get_or_create copes with a racing creator)."""
    rows = model._default_manager.select_for_update()
    row = rows.filter(**lookup).first()
    if row is None:
        model._default_manager.get_or_create(**lookup)
        row = rows.get(**lookup)
    return row


def insert_unless_present(row: models.Model) -> bool:
    """INSERT `row` unless a unique constraint already holds one like it: one
    `INSERT … ON CONFLICT DO NOTHING RETURNING` statement, with no savepoint to recover
    from the IntegrityError a plain insert would raise. True (and the row's pk set) when
    it was inserted. SQLite and PostgreSQL both speak this; no signals are sent."""
    from django.db.models.constants import OnConflict
    from django.db.models.sql import InsertQuery

    model = type(row)
    meta = model._meta
    fields = [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]
    for field in fields:
        field.pre_save(row, True)  # auto_now_add and friends
    query = InsertQuery(model, on_conflict=OnConflict.IGNORE)
    query.insert_values(fields, [row])
    returned = query.get_compiler(using=router_alias(row)).execute_sql([meta.pk])
    if not returned:
        return False
    row.pk = returned[0][0]
    mark_saved(row, router_alias(row))
    return True


def mark_saved[M: models.Model](row: M, alias: str | None = None) -> M:
    """`row`, built from what a hand-written INSERT … RETURNING gave back, marked as the
    saved row it is (on `alias`, the current connection's by default), so a later save()
    updates it instead of inserting it again."""
    row._state.adding = False
    row._state.db = alias or connection.alias
    return row


def router_alias(row: models.Model) -> str:
    from django.db import router

    return router.db_for_write(type(row), instance=row)


def save_fields(*rows: tuple[models.Model, Sequence[str]]) -> None:
    """Save the named fields of each row, as `row.save(update_fields=fields)` would,
    without the model signals (the rows passed here have no receivers and no `save()` of
    their own).

    On PostgreSQL the UPDATEs are one statement, each a data-modifying `WITH` of it that
    returns the rows it updated: one round trip and one statement instead of one per
    row. A landing writes its list and sortie: the list's row lock, which the list's other
    flights queue for, is let go that much sooner (docs/PERFORMANCE.md). The rows must be
    different rows (the parts of one statement share one snapshot). Elsewhere one `save`
    per row. Like `save`, a row that is no longer there raises its model's `NotUpdated`,
    and the caller's transaction rolls back.

    For plain values of a row's own concrete fields: not for fields of an inherited
    parent's table, nor for expressions (`F()`), which `save` would handle."""
    if any(not fields for _, fields in rows):
        raise ValueError("save_fields needs at least one field for every row")
    if connection.vendor != "postgresql" or len(rows) < 2:
        for row, fields in rows:
            row.save(update_fields=fields)
        return
    parts: list[str] = []
    params: list[Any] = []
    for n, (row, fields) in enumerate(rows):
        model = type(row)
        concrete = {f.name: f for f in model._meta.concrete_fields}
        query = UpdateQuery(model)
        query.add_update_values({name: concrete[name].pre_save(row, False) for name in fields})
        query.add_q(models.Q(pk=row.pk))
        text, args = query.get_compiler(connection.alias).as_sql()
        parts.append(f"u{n} AS ({text} RETURNING 1)")
        params.extend(args)
    counted = ", ".join(f"(SELECT count(*) FROM u{n})" for n in range(len(rows)))
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {', '.join(parts)} SELECT {counted}", params)
        counts = list(cursor.fetchone())
    for (row, _), count in zip(rows, counts, strict=True):
        if count != 1:
            # Django 6 gives every model a NotUpdated; the stubs do not know it yet.
            not_updated = type(row).NotUpdated  # type: ignore[attr-defined]
            raise not_updated(f"save_fields found no {type(row).__name__} {row.pk} to update")


def action_atomic() -> transaction.Atomic:
    """The transaction of an action that is also called inside other actions' transactions
    (a verdict recorded while a sortie lands, say): its own when called alone, its
    caller's when nested, without a savepoint.

    A nested `atomic()` opens a savepoint and releases it: two statements, and on
    PostgreSQL two round trips, per call. A flight task made 4.8 of them on average, a
    tenth of its statements (docs/PERFORMANCE.md). The savepoint only matters to a caller
    that catches the nested action's error and carries on; none of this helper's callers
    do (the error ends the whole transaction, as it should), and Django refuses any query
    after such an error until the outer block ends, so a caller that did would fail
    loudly. Where a caller does recover (an `IntegrityError` expected from a race), keep
    a plain `atomic()`."""
    return transaction.atomic(savepoint=False)


def pool_size_for(worker_threads: int) -> int:
    """The most connections a process's PostgreSQL pool may open: one per worker thread
    (each holds one while its task runs) plus headroom for everything else."""
    return max(POOL_MIN_MAX, worker_threads + POOL_HEADROOM)


def fit_pool_to_threads(worker_threads: int, *, alias: str = "default") -> None:
    """Let the pool grow to `pool_size_for(worker_threads)` connections, for a process
    whose thread count is not the settings' (`db_worker --threads`). Closes the pool if it
    is already open, so the next connection opens one of the new size."""
    wrapper = connections[alias]
    pool = wrapper.settings_dict.get("OPTIONS", {}).get("pool")
    if wrapper.vendor != "postgresql" or not isinstance(pool, dict):
        return
    wanted = pool_size_for(worker_threads)
    if pool.get("max_size", 0) >= wanted:
        return
    wrapper.settings_dict["OPTIONS"]["pool"] = {**pool, "max_size": wanted}
    wrapper.close()  # hand this thread's connection back before its pool goes
    wrapper.close_pool()  # type: ignore[attr-defined]  # PostgreSQL's wrapper only, checked above


def first_line(exc: BaseException) -> str:
    """An error as one log or command line: its message's first line, or its type's name."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def database_away(exc: BaseException) -> bool:
    """Whether a database error means "not answering right now" rather than a bug:
    PostgreSQL down, restarting, unreachable, out of pool connections, a deadlock or a
    cancelled statement (all OperationalError or InterfaceError), or SQLite still locked
    after its timeout. SQLite's other OperationalErrors ("no such table") are bugs."""
    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    if connection.vendor == "postgresql":
        return True
    return "locked" in str(exc).lower()
