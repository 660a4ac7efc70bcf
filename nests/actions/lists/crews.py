"""Which crows fly an item (docs/LISTS.md).

Core-first, rotating within the nest's core, then borrowed from outside it, rotating. The
Sentry and Elder are never workers; Quill and Boss are roster crows and may be picked;
quarantined and retired crows are skipped. In the `todo` nest (an empty core) every crow
comes from the whole flock and none is "borrowed".
"""

from __future__ import annotations

from django.conf import settings

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


def pick_crows(nest_id: str, *, count: int) -> list[tuple[str, bool]]:
    """Up to `count` different crows for one item, as (name, borrowed), and advance the
    nest's rotation. Call inside a transaction: the rotation row is locked."""
    count = max(0, min(count, settings.CROWS_MAX_CROWS_PER_ITEM))
    nest = Nest.objects.get(nest_id=nest_id)
    able = worker_names()
    open_nest = nest.kind == Nest.Kind.OPEN
    core = [] if open_nest else [c for c in nest.core if c in able]
    outside = [c for c in able if c not in core]

    rotation = lock_or_create(CrowRotation, nest_id=nest_id)
    from_core = _take(core, rotation.core_next, count)
    from_outside = _take(outside, rotation.outside_next, count - len(from_core))
    rotation.core_next = (rotation.core_next + len(from_core)) % max(1, len(core))
    rotation.outside_next = (rotation.outside_next + len(from_outside)) % max(1, len(outside))
    rotation.save(update_fields=["core_next", "outside_next"])
    borrowed = not open_nest
    return [(name, False) for name in from_core] + [(name, borrowed) for name in from_outside]
