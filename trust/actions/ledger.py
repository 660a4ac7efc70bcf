"""Moving trust: promotion after a streak of owner approvals, demotion on a rejection.

docs/LISTS.md: a holder is promoted one level after CROWS_TRUST_STREAK consecutive owner
approvals for that task type since its last level change; one owner rejection demotes
one level and resets the streak. Timeouts and Jev misses never move trust, so nothing
here is called for them. Each change emits `trust.changed`, on the stream of the list
whose verdict caused it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from flock.db import action_atomic, insert_unless_present, mark_saved
from flock.errors import BadInput
from flock.events import emit
from flock.personas import TASK_TYPES
from trust.actions.locking import lock_event_log
from trust.models import STRANGER, TRUSTED, TrustEntry, TrustHolder
from trust.payloads import TrustChanged

# How often an append starts again after losing its entry's number to a racing one. Each
# loss means another append committed meanwhile; this many in a row is a bug.
APPEND_TRIES = 50

_COLUMNS = ("holder", "task_type", "outcome", "source", "level_before", "level", "streak", "list_id", "item_id",
            "at", "seq")


def _append_outcome(holder: str, task_type: str, *, approved: bool, source: str, list_id: str,
                    item_id: str) -> TrustEntry | None:
    """Append the entry an owner judgment leaves, computed from the holder's newest entry,
    in one `INSERT … SELECT … ON CONFLICT DO NOTHING RETURNING`; None when a racing
    append took its number (`seq`) first.

    The ledger's rule (docs/LISTS.md) is written here in SQL, as record_trust_outcome had
    it in Python: an approval adds to the streak, and CROWS_TRUST_STREAK of them promote
    one level (short of trusted) and start the streak again; a rejection demotes one level
    (not below stranger) and resets the streak. On PostgreSQL a racing append that has
    not committed makes the insert wait for it, then insert nothing: the next try's
    statement sees its entry."""
    q = connection.ops.quote_name
    if approved:
        promoted = f"{q('streak')} + 1 >= %s AND {q('level')} < %s"
        level = f"CASE WHEN {promoted} THEN {q('level')} + 1 ELSE {q('level')} END"
        streak = f"CASE WHEN {promoted} THEN 0 ELSE {q('streak')} + 1 END"
        rule = [settings.CROWS_TRUST_STREAK, TRUSTED] * 2
    else:
        level = f"CASE WHEN {q('level')} > %s THEN {q('level')} - 1 ELSE %s END"
        streak = "0"
        rule = [STRANGER, STRANGER]
    table = q(TrustEntry._meta.db_table)
    outcome = TrustEntry.Outcome.APPROVED if approved else TrustEntry.Outcome.REJECTED
    now = timezone.now()
    sql = (
        f"WITH newest AS (SELECT {q('level')}, {q('streak')}, {q('seq')} FROM {table}"
        f" WHERE {q('holder')} = %s AND {q('task_type')} = %s ORDER BY {q('seq')} DESC LIMIT 1),"
        f" balance AS (SELECT COALESCE(MAX({q('level')}), %s) AS {q('level')},"
        f" COALESCE(MAX({q('streak')}), 0) AS {q('streak')}, COALESCE(MAX({q('seq')}), 0) AS {q('seq')} FROM newest)"
        f" INSERT INTO {table} ({', '.join(q(c) for c in _COLUMNS)})"
        f" SELECT %s, %s, %s, %s, {q('level')}, {level}, {streak}, %s, %s, %s, {q('seq')} + 1 FROM balance WHERE 1 = 1"
        f" ON CONFLICT ({q('holder')}, {q('task_type')}, {q('seq')}) DO NOTHING"
        f" RETURNING {q('id')}, {q('level_before')}, {q('level')}, {q('streak')}, {q('seq')}"
    )
    # The SELECT's parameters in the order its expressions come: level, then streak.
    level_params, streak_params = (rule[:2], rule[2:]) if approved else (rule, [])
    params = [holder, task_type, STRANGER, holder, task_type, outcome, source, *level_params, *streak_params,
              list_id, item_id, connection.ops.adapt_datetimefield_value(now)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    pk, before, after, streak_after, seq = row
    entry = TrustEntry(
        pk=pk, holder=holder, task_type=task_type, outcome=outcome, source=source, level_before=before,
        level=after, streak=streak_after, list_id=list_id, item_id=item_id, at=now, seq=seq,
    )
    mark_saved(entry)
    _first_entry(entry)
    return entry


def _first_entry(entry: TrustEntry) -> None:
    """A holder's first entry for a task type names the holder for the admin."""
    if entry.seq == 1:
        insert_unless_present(TrustHolder(holder=entry.holder, task_type=entry.task_type))


def newest_balance(holder: str, task_type: str) -> tuple[int, int, int]:
    """(level, streak, seq) of the holder's newest entry; a stranger with none yet."""
    row = (
        TrustEntry.objects.filter(holder=holder, task_type=task_type)
        .order_by("-seq").values_list("level", "streak", "seq").first()
    )
    return (int(row[0]), int(row[1]), int(row[2])) if row is not None else (STRANGER, 0, 0)


def append_entry(entry: TrustEntry) -> bool:
    """Append an entry computed from newest_balance (its `seq` the next number); False
    when a racing append took that number first: read the balance again and recompute."""
    if not insert_unless_present(entry):
        return False
    _first_entry(entry)
    return True


def record_trust_outcome(
    holder: str,
    *,
    task_type: str,
    approved: bool,
    list_id: str = "",
    item_id: str = "",
    nest_id: str = "",
    source: str = TrustEntry.Source.VERDICT,
) -> TrustEntry:
    """Append one owner judgment to `holder`'s ledger for `task_type`; returns the entry.

    Call it inside the verdict's transaction, so the entry and the verdict commit together.
    """
    if task_type not in TASK_TYPES:
        raise BadInput(f"task_type must be one of {', '.join(TASK_TYPES)}, got {task_type!r}")
    with action_atomic():
        lock_event_log()
        for _ in range(APPEND_TRIES):
            entry = _append_outcome(holder, task_type, approved=approved, source=source, list_id=list_id,
                                    item_id=item_id)
            if entry is not None:
                break
        else:
            raise RuntimeError(f"could not append to {holder}/{task_type}'s trust ledger in {APPEND_TRIES} tries")
        if entry.level != entry.level_before:
            changed: TrustChanged = {"holder": holder, "task_type": task_type, "from": entry.level_before,
                                     "to": entry.level}
            emit(
                "trust.changed",
                changed,
                list_id=list_id,
                nest_id=nest_id,
            )
    return entry


def seed_trust(holder: str, *, task_type: str, level: int = TRUSTED, by: str = "") -> int:
    """Record owner approvals (source "seed") until `holder` reaches `level` for `task_type`.

    A setup step for a flock the owner already trusts (benches, load tests, a demo): the
    entries follow the ledger's own rule (a promotion per CROWS_TRUST_STREAK approvals)
    and emit `trust.changed` at each promotion (with `by` when given: `trust_seed` says who
    seeded), so the ledger stays the whole truth. Returns how many entries it appended."""
    if not STRANGER <= level <= TRUSTED:
        raise BadInput(f"level must be {STRANGER}–{TRUSTED}, got {level}")
    if task_type not in TASK_TYPES:
        raise BadInput(f"task_type must be one of {', '.join(TASK_TYPES)}, got {task_type!r}")
    appended = 0
    with transaction.atomic():
        lock_event_log()
        tries = 0
        while True:
            current, streak, seq = newest_balance(holder, task_type)
            if current >= level:
                return appended
            before = current
            streak += 1
            if streak >= settings.CROWS_TRUST_STREAK:
                current, streak = current + 1, 0
            entry = TrustEntry(
                holder=holder, task_type=task_type, outcome=TrustEntry.Outcome.APPROVED,
                source=TrustEntry.Source.SEED, level_before=before, level=current, streak=streak, seq=seq + 1,
            )
            if not append_entry(entry):
                tries += 1
                if tries >= APPEND_TRIES:
                    raise RuntimeError(f"could not append to {holder}/{task_type}'s trust ledger in {tries} tries")
                continue
            appended += 1
            if current != before:
                seeded: TrustChanged = {"holder": holder, "task_type": task_type, "from": before, "to": current}
                if by:
                    seeded["by"] = by
                emit("trust.changed", seeded)
