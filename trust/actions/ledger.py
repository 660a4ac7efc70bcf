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
from django.db.models import OuterRef, Subquery

from flock.db import action_atomic, lock_or_create
from flock.errors import BadInput
from flock.events import emit
from flock.personas import TASK_TYPES
from trust.actions.locking import lock_event_log
from trust.models import STRANGER, TRUSTED, TrustEntry, TrustHolder
from trust.payloads import TrustChanged
from trust.queries import trust_balance


def _locked_balance(holder: str, task_type: str) -> tuple[int, int]:
    """Lock the holder's row and read its (level, streak) from the newest ledger entry.

    On SQLite both in one statement: every transaction there holds the database's write
    lock from its BEGIN, so the newest entry read with the lock is the newest there is.
    On PostgreSQL the entry is read by a statement of its own, after the lock is granted:
    a subquery of the locking statement would read the snapshot taken before it waited,
    missing an entry another verdict on the same holder just committed."""
    if connection.vendor != "postgresql":
        newest = TrustEntry.objects.filter(holder=OuterRef("holder"), task_type=OuterRef("task_type")).order_by("-id")
        row = (
            TrustHolder.objects.select_for_update()
            .filter(holder=holder, task_type=task_type)
            .annotate(level=Subquery(newest.values("level")[:1]), streak=Subquery(newest.values("streak")[:1]))
            .values_list("level", "streak")
            .first()
        )
        if row is not None:
            level, streak = row
            return (STRANGER, 0) if level is None else (int(level), int(streak))
    lock_or_create(TrustHolder, holder=holder, task_type=task_type)
    return trust_balance(holder, task_type)


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
        level, streak = _locked_balance(holder, task_type)
        before = level
        if approved:
            streak += 1
            if streak >= settings.CROWS_TRUST_STREAK and level < TRUSTED:
                level, streak = level + 1, 0
        else:
            level, streak = max(STRANGER, level - 1), 0
        entry = TrustEntry.objects.create(
            holder=holder,
            task_type=task_type,
            outcome=TrustEntry.Outcome.APPROVED if approved else TrustEntry.Outcome.REJECTED,
            source=source,
            level_before=before,
            level=level,
            streak=streak,
            list_id=list_id,
            item_id=item_id,
        )
        if level != before:
            changed: TrustChanged = {"holder": holder, "task_type": task_type, "from": before, "to": level}
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
    entries: list[TrustEntry] = []
    with transaction.atomic():
        lock_event_log()
        current, streak = _locked_balance(holder, task_type)
        while current < level:
            before = current
            streak += 1
            if streak >= settings.CROWS_TRUST_STREAK:
                current, streak = current + 1, 0
            entries.append(TrustEntry(
                holder=holder, task_type=task_type, outcome=TrustEntry.Outcome.APPROVED,
                source=TrustEntry.Source.SEED, level_before=before, level=current, streak=streak,
            ))
            if current != before:
                seeded: TrustChanged = {"holder": holder, "task_type": task_type, "from": before, "to": current}
                if by:
                    seeded["by"] = by
                emit("trust.changed", seeded)
        TrustEntry.objects.bulk_create(entries)
    return len(entries)
