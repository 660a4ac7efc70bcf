"""Which crows fly an item (docs/LISTS.md "Crew").

Core-first, rotating within the nest's core, then borrowed from outside it, rotating. The
Sentry and Elder are never workers; Quill and Boss are roster crows and may be picked;
quarantined and retired crows are skipped. In the `todo` nest (an empty core) every crow
comes from the whole flock and none is "borrowed".

Rotating is in rounds: within a round each crow of a side flies once, and the crows still
waiting for their turn are taken best fit first (nests.crow_fit: typed for the item's task
type, then Jev's fit score, then roster order). So a code fix goes to the coder when the
coder's turn is still to come, and the core still shares the work evenly.
"""

from __future__ import annotations

from django.conf import settings

from flock.db import lock_or_create
from flock.models import Crow
from nests import crow_fit
from nests.models import CrowRotation, Nest

NOT_WORKERS = (Crow.Role.SENTRY, Crow.Role.ELDER)


def workers() -> list[Crow]:
    """Active roster crows that may fly as workers: the working crows first, in hatch
    order, then Quill and Boss, whose day jobs are the owner and the flock."""
    rows = list(
        Crow.objects.filter(status=Crow.Status.ACTIVE, in_roster=True)
        .exclude(role__in=NOT_WORKERS)
        .order_by("id")
        .only("name", "role", "epithet", "strength", "task_types")
    )
    return [c for c in rows if c.role == Crow.Role.WORKER] + [c for c in rows if c.role != Crow.Role.WORKER]


def _turns(side: list[str], taken: list[str], count: int, best_first: list[str]) -> tuple[list[str], list[str]]:
    """`count` crows of `side` whose turn it is, best first, and who has had a turn in the
    round after them. A crow that left the side (quarantined, retired, taken out of the
    core) no longer holds a turn; a round every crow of the side has flown starts anew."""
    rank = {name: n for n, name in enumerate(best_first)}
    taken = [name for name in taken if name in side]
    picks: list[str] = []
    while len(picks) < min(count, len(side)):
        if set(side) <= set(taken):
            taken = []
        waiting = [name for name in side if name not in taken and name not in picks]
        pick = min(waiting, key=lambda name: rank[name])
        picks.append(pick)
        taken.append(pick)
    return picks, taken


def pick_crows(nest_id: str, *, count: int, text: str = "", task_type: str = "") -> list[tuple[str, bool]]:
    """Up to `count` different crows for one item, as (name, borrowed), the best fit for
    `text` of type `task_type` first among those whose turn it is, and move the nest's
    rotation on. Call inside a transaction: the rotation row is locked."""
    count = max(0, min(count, settings.CROWS_MAX_CROWS_PER_ITEM))
    nest = Nest.objects.get(nest_id=nest_id)
    able = workers()
    names = [crow.name for crow in able]
    open_nest = nest.kind == Nest.Kind.OPEN
    core = [] if open_nest else [c for c in nest.core if c in names]
    outside = [c for c in names if c not in core]
    scores = {crow.name: crow_fit.jev_fit(text, crow) for crow in able} if text.strip() else {}
    best_first = crow_fit.best_first(able, task_type, scores)

    # The row lock makes racing picks take turns: the second reads the round the first left.
    rotation = lock_or_create(CrowRotation, nest_id=nest_id)
    from_core, rotation.core_taken = _turns(core, list(rotation.core_taken), count, best_first)
    from_outside, rotation.outside_taken = _turns(
        outside, list(rotation.outside_taken), count - len(from_core), best_first
    )
    rotation.save(update_fields=["core_taken", "outside_taken"])
    borrowed = not open_nest
    return [(name, False) for name in from_core] + [(name, borrowed) for name in from_outside]
