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
