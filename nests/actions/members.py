"""A nest's core members, changed one crow at a time (the admin's Add/Remove member).

The same guardrails as creating a nest (docs/CHATROOM.md, Rooms): roster crows only, no
duplicates, 1–8 of them; the open `todo` nest and direct chats have no editable core.
Emits `nest.members_changed` with the new core and `by`, who changed it."""

from __future__ import annotations

from django.db import transaction

from flock import queries as flock_queries
from flock.errors import BadInput, Conflict, NotFound
from flock.events import emit
from nests.actions.chat.moderator import stop_for_grounded
from nests.actions.rooms import MAX_CORE, MIN_CORE
from nests.models import Nest
from nests.payloads import NestMembersChanged


def _locked_nest(nest_id: str) -> Nest:
    nest = Nest.objects.select_for_update().filter(nest_id=nest_id).first()
    if nest is None:
        raise NotFound(f"no such nest: {nest_id!r}")
    if nest.kind != Nest.Kind.NEST:
        raise BadInput(f"{nest.nest_id} is {'the open flock' if nest.kind == Nest.Kind.OPEN else 'a direct chat'}; its members are not picked")
    return nest


def _changed(nest: Nest, *, by: str, added: list[str], removed: list[str]) -> None:
    nest.save(update_fields=["core"])
    emit(
        "nest.members_changed",
        NestMembersChanged(nest_id=nest.nest_id, crows=list(nest.core), added=added, removed=removed, by=by),
    )


def add_nest_member(nest_id: str, crow: str, *, by: str) -> Nest:
    crow = (crow or "").strip().lstrip("@")
    with transaction.atomic():
        nest = _locked_nest(nest_id)
        roster = flock_queries.roster_names()
        name = next((c for c in roster if c.lower() == crow.lower()), None)
        if name is None:
            raise BadInput(f"{crow!r} is not in the roster (the roster is {', '.join(roster)})")
        if name in nest.core:
            raise Conflict(f"{name} is already a member of {nest.nest_id}")
        if len(nest.core) >= MAX_CORE:
            raise BadInput(f"{nest.nest_id} already has {len(nest.core)} core crows, the most a nest has")
        nest.core = [*nest.core, name]
        _changed(nest, by=by, added=[name], removed=[])
    return nest


def remove_nest_member(nest_id: str, crow: str, *, by: str) -> Nest:
    crow = (crow or "").strip().lstrip("@")
    with transaction.atomic():
        nest = _locked_nest(nest_id)
        name = next((c for c in nest.core if c.lower() == crow.lower()), None)
        if name is None:
            raise NotFound(f"{crow!r} is not a member of {nest.nest_id}")
        if len(nest.core) <= MIN_CORE:
            raise BadInput(f"{nest.nest_id} needs at least {MIN_CORE} core crow; add another before removing {name}")
        nest.core = [c for c in nest.core if c != name]
        _changed(nest, by=by, added=[], removed=[name])
        # A debate in this room cannot go on without it (docs/GOVERNANCE.md).
        stop_for_grounded(name, "left the room", nest=nest)
    return nest


def _named(words: object, field: str) -> list[str]:
    if words is None:
        return []
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise BadInput(f"{field} must be a list of crow names")
    names = [w.strip().lstrip("@") for w in words if w.strip().lstrip("@")]
    if not names:
        raise BadInput(f"{field}, when given, names at least one crow")
    return names


def change_nest_members(nest_id: str, *, add: object = None, remove: object = None, by: str) -> tuple[Nest, list[str], list[str]]:
    """Add and remove several core members of a nest at once, all or nothing: the owner's
    `POST /api/nests/{id}/members` and Boss's "add Inky to #launch" (docs/GOVERNANCE.md,
    "3. Boss runs the flock"). NotFound for an unknown nest; BadInput naming the crows
    not in the roster, a crow already a member (to add) or not one (to remove), a crow
    both added and removed, or a core that would leave 1–8 crows. Emits one
    `nest.members_changed` with everything that changed. Returns (nest, added, removed)."""
    with transaction.atomic():
        # The room first: a change to a room that does not exist is a 404 whatever it says.
        nest = _locked_nest(nest_id)
        adding, removing = _named(add, "add"), _named(remove, "remove")
        if not adding and not removing:
            raise BadInput("name crows to add and/or remove")
        roster = {name.lower(): name for name in flock_queries.roster_names()}
        unknown = [w for w in (*adding, *removing) if w.lower() not in roster]
        if unknown:
            raise BadInput(
                f"not crows of the roster: {', '.join(dict.fromkeys(unknown))} (the roster is {', '.join(roster.values())})"
            )
        added = list(dict.fromkeys(roster[w.lower()] for w in adding))
        removed = list(dict.fromkeys(roster[w.lower()] for w in removing))
        both = [c for c in added if c in removed]
        if both:
            raise BadInput(f"{', '.join(both)} cannot be added and removed at once")
        already = [c for c in added if c in nest.core]
        if already:
            raise BadInput(f"already members of {nest.nest_id}: {', '.join(already)}")
        outside = [c for c in removed if c not in nest.core]
        if outside:
            raise BadInput(f"not members of {nest.nest_id}: {', '.join(outside)} (its members are {', '.join(nest.core)})")
        core = [c for c in nest.core if c not in removed] + added
        if not MIN_CORE <= len(core) <= MAX_CORE:
            raise BadInput(f"{nest.nest_id} would have {len(core)} core crows; a nest has {MIN_CORE} to {MAX_CORE}")
        nest.core = core
        _changed(nest, by=by, added=added, removed=removed)
        for name in removed:
            # A debate in this room cannot go on without it (docs/GOVERNANCE.md).
            stop_for_grounded(name, "left the room", nest=nest)
    return nest, added, removed
