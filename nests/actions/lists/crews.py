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

from collections.abc import Sequence
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import F, JSONField, QuerySet, Subquery

from flock.db import lock_or_create
from flock.models import Crow
from nests import crow_fit
from nests.models import CrowRotation, Nest

NOT_WORKERS = (Crow.Role.SENTRY, Crow.Role.ELDER)


def workers() -> list[Crow]:
    """Active roster crows that may fly as workers: the working crows first, in hatch
    order, then Quill and Boss, whose day jobs are the owner and the flock."""
    return _working_first(list(_roster()))


def _roster() -> QuerySet[Crow]:
    return (
        Crow.objects.filter(status=Crow.Status.ACTIVE, in_roster=True)
        .exclude(role__in=NOT_WORKERS)
        .order_by("id")
        .only("name", "role", "epithet", "strength", "task_types")
    )


def _working_first(rows: Sequence[Crow]) -> list[Crow]:
    return [c for c in rows if c.role == Crow.Role.WORKER] + [c for c in rows if c.role != Crow.Role.WORKER]


class _NestSeen(NamedTuple):
    """What a pick reads of its nest: its kind and core, and its rotation as it stood."""

    kind: str
    core: list[str]
    turns: int | None
    core_taken: list[str]
    outside_taken: list[str]


def _roster_with_nest(nest_id: str) -> tuple[list[Crow], _NestSeen]:
    """The roster (workers()) and the nest with its rotation, in one statement: the nest's
    columns ride on every roster row as subqueries of one row each (a roster is a dozen
    crows). An empty roster reads the nest alone. Nest.DoesNotExist as Nest.objects.get."""
    nests = Nest.objects.filter(nest_id=nest_id)
    rotations = CrowRotation.objects.filter(nest_id=nest_id)
    rotation = {
        "seen_turns": Subquery(rotations.values("turns")[:1]),
        "seen_core_taken": Subquery(rotations.values("core_taken")[:1], output_field=JSONField()),
        "seen_outside_taken": Subquery(rotations.values("outside_taken")[:1], output_field=JSONField()),
    }
    rows = list(_roster().annotate(
        nest_kind=Subquery(nests.values("kind")[:1]),
        nest_core=Subquery(nests.values("core")[:1], output_field=JSONField()),
        **rotation,
    ))
    if rows and rows[0].nest_kind is not None:
        first: Any = rows[0]
        return _working_first(rows), _seen(first.nest_kind, first.nest_core, first)
    nest: Any = Nest.objects.annotate(**rotation).get(nest_id=nest_id)
    return _working_first(rows), _seen(nest.kind, nest.core, nest)


def _seen(kind: str, core: list[str] | None, row: Any) -> _NestSeen:
    """The nest as a pick saw it, from a row carrying the rotation's `seen_*` columns."""
    return _NestSeen(kind, list(core or []), row.seen_turns, list(row.seen_core_taken or []),
                     list(row.seen_outside_taken or []))


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


def pick_crows(
    nest_id: str, *, count: int, text: str = "", task_type: str = "", parts: Sequence[str] = ()
) -> list[tuple[str, bool]]:
    """Up to `count` different crows for one item, as (name, borrowed), the best fit for
    `text` of type `task_type` first among those whose turn it is, and move the nest's
    rotation on. With a split's `parts`, the n-th crow is the one to fly the n-th of
    `fit_subtasks(parts, <the number of crows>)`. Call inside a transaction: the rotation
    row is locked."""
    count = max(0, min(count, settings.CROWS_MAX_CROWS_PER_ITEM))
    able, nest = _roster_with_nest(nest_id)
    names = [crow.name for crow in able]
    open_nest = nest.kind == Nest.Kind.OPEN
    core = [] if open_nest else [c for c in nest.core if c in names]
    outside = [c for c in names if c not in core]
    # Until Jev's fit has loaded (the first seconds after a start) it scores nobody here:
    # the task types and roster order decide, and no load happens under the lock.
    scored = crow_fit.ready_without_loading()
    scores = {crow.name: crow_fit.jev_fit(text, crow) for crow in able} if scored and text.strip() else {}
    best_first = crow_fit.best_first(able, task_type, scores)

    def take_turns(core_taken: list[str], outside_taken: list[str]) -> tuple[list[str], list[str], list[str], list[str]]:
        from_core, core_taken = _turns(core, core_taken, count, best_first)
        from_outside, outside_taken = _turns(outside, outside_taken, count - len(from_core), best_first)
        return from_core, from_outside, core_taken, outside_taken

    # The rotation was read with the nest; it moves on only if no other pick moved it
    # meanwhile (its `turns` unchanged), in one UPDATE, which waits for a racing pick's
    # commit and then matches nothing. That pick, or a nest's first, locks the row and
    # takes its turns from what the row holds then.
    from_core, from_outside, core_taken, outside_taken = take_turns(nest.core_taken, nest.outside_taken)
    moved = CrowRotation.objects.filter(nest_id=nest_id, turns=nest.turns).update(
        core_taken=core_taken, outside_taken=outside_taken, turns=F("turns") + 1
    ) if nest.turns is not None else 0
    if not moved:
        rotation = lock_or_create(CrowRotation, nest_id=nest_id)
        from_core, from_outside, rotation.core_taken, rotation.outside_taken = take_turns(
            list(rotation.core_taken), list(rotation.outside_taken)
        )
        rotation.turns += 1
        rotation.save(update_fields=["core_taken", "outside_taken", "turns"])
    borrowed = not open_nest
    picks = [(name, False) for name in from_core] + [(name, borrowed) for name in from_outside]
    if parts:
        picks = _assign_parts(picks, fit_subtasks(parts, len(picks)), {crow.name: crow for crow in able} if scored else {})
    return picks


def fit_subtasks(subtasks: Sequence[str], limit: int) -> list[str]:
    """At most `limit` parts: the surplus flies with the last crow, nothing is dropped."""
    if len(subtasks) <= limit:
        return list(subtasks)
    return [*subtasks[: limit - 1], "; ".join(subtasks[limit - 1 :])]


def _assign_parts(picks: list[tuple[str, bool]], parts: list[str], crows: dict[str, Crow]) -> list[tuple[str, bool]]:
    """`picks` (one per part) reordered so that the n-th flies `parts[n]`: the pairs of a
    part and a crow that fit best are matched first (the crow typed for the part's own task
    type, then Jev's fit score, then the parts' and the picks' order), so in "fix the login
    bug and update the docs" the coder takes the bug and the writer the docs."""
    if len(picks) < 2 or len(picks) != len(parts):
        return picks
    ranked: list[tuple[tuple[bool, float, int, int], int, int]] = []
    for n, part in enumerate(parts):
        part_type = crow_fit.task_type_of(part)
        for m, (name, _) in enumerate(picks):
            crow = crows.get(name)
            typed = crow is not None and crow_fit.is_typed_for(crow, part_type)
            fit = crow_fit.jev_fit(part, crow) if crow is not None else 0.0
            ranked.append(((not typed, -fit, n, m), n, m))
    flies: dict[int, int] = {}
    for _, n, m in sorted(ranked):
        if n not in flies and m not in flies.values():
            flies[n] = m
    return [picks[flies[n]] for n in range(len(parts))]
