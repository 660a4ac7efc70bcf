"""Which crows fly an item (docs/LISTS.md).

Core-first, rotating within the nest's core, then borrowed from outside it, rotating. The
Sentry and Elder are never workers; Quill and Boss are roster crows and may be picked;
quarantined and retired crows are skipped. In the `todo` nest (an empty core) every crow
comes from the whole flock and none is "borrowed".
"""

from __future__ import annotations

from django.conf import settings
from django.db import connection

from flock.db import lock_or_create
from flock.models import Crow
from nests.models import CrowRotation, Nest

NOT_WORKERS = (Crow.Role.SENTRY, Crow.Role.ELDER)


def worker_names() -> list[str]:
    """Active roster crows that may fly as workers: the working crows first, in hatch
    order, then Quill and Boss, whose day jobs are the owner and the flock."""
    rows = (
        Crow.objects.filter(status=Crow.Status.ACTIVE, in_roster=True)
        .exclude(role__in=NOT_WORKERS)
        .order_by("id")
        .values_list("name", "role")
    )
    workers = [name for name, role in rows if role == Crow.Role.WORKER]
    return workers + [name for name, role in rows if role != Crow.Role.WORKER]


def _take(names: list[str], start: int, count: int) -> list[str]:
    if not names:
        return []
    count = min(count, len(names))
    return [names[(start + i) % len(names)] for i in range(count)]


def _advance(nest_id: str, core_step: int, core_n: int, outside_step: int, outside_n: int) -> tuple[int, int]:
    """Move the nest's rotation on by the given steps (modulo each side's size); returns
    where it stands now. Creates the row on the nest's first pick."""
    rotations = CrowRotation.objects.filter(nest_id=nest_id)
    table = connection.ops.quote_name(CrowRotation._meta.db_table)
    for _ in range(2):
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET core_next = (core_next + %s) %% %s, outside_next = (outside_next + %s) %% %s"
                " WHERE nest_id = %s RETURNING core_next, outside_next",
                [core_step, max(1, core_n), outside_step, max(1, outside_n), nest_id],
            )
            row = cursor.fetchone()
        if row is not None:
            return int(row[0]), int(row[1])
        if not rotations.exists():
            lock_or_create(CrowRotation, nest_id=nest_id)  # copes with a racing creator
    raise RuntimeError(f"the crew rotation of nest {nest_id!r} could not be moved on")


def pick_crows(nest_id: str, *, count: int) -> list[tuple[str, bool]]:
    """Up to `count` different crows for one item, as (name, borrowed), and advance the
    nest's rotation. Call inside a transaction: the rotation row is locked."""
    count = max(0, min(count, settings.CROWS_MAX_CROWS_PER_ITEM))
    nest = Nest.objects.get(nest_id=nest_id)
    able = worker_names()
    open_nest = nest.kind == Nest.Kind.OPEN
    core = [] if open_nest else [c for c in nest.core if c in able]
    outside = [c for c in able if c not in core]

    # How many come from each side does not depend on where the rotation stands, so the
    # rotation moves on in one UPDATE … RETURNING (it locks the row, and PostgreSQL
    # re-reads a row it waited for), and the picks start where it stood before.
    from_core_n = min(count, len(core))
    from_outside_n = min(count - from_core_n, len(outside))
    core_next, outside_next = _advance(nest_id, from_core_n, len(core), from_outside_n, len(outside))
    from_core = _take(core, (core_next - from_core_n) % max(1, len(core)), from_core_n)
    from_outside = _take(outside, (outside_next - from_outside_n) % max(1, len(outside)), from_outside_n)
    borrowed = not open_nest
    return [(name, False) for name in from_core] + [(name, borrowed) for name in from_outside]
