"""Reads of rooms and their messages."""

from __future__ import annotations

from flock import queries as flock_queries
from flock.models import Crow
from nests.models import Nest

# Quill and Boss serve every room (DECISIONS.md "Who may post where").
EVERYWHERE_ROLES = (Crow.Role.ASSISTANT, Crow.Role.CHIEF_OF_STAFF)


def nest_exists(nest_id: str) -> bool:
    if Nest.objects.filter(nest_id=nest_id).exists():
        return True
    # A direct chat exists for every living crow, even before its first message.
    return direct_chat_crow(nest_id) is not None


def direct_chat_crow(nest_id: str) -> Crow | None:
    if not nest_id.startswith("dm-"):
        return None
    wanted = nest_id.removeprefix("dm-")
    for crow in flock_queries.living_crows():
        if crow.name.lower() == wanted:
            return crow
    return None


def nests_for_listing() -> list[Nest]:
    return list(Nest.objects.exclude(kind=Nest.Kind.DIRECT).order_by("id"))


def crow_members(nest: Nest) -> list[str]:
    """The crows who may speak in a nest (the owner may speak everywhere)."""
    living = list(flock_queries.living_crows())
    if nest.kind == Nest.Kind.OPEN:
        return [c.name for c in living]
    everywhere = [c.name for c in living if c.role in EVERYWHERE_ROLES]
    members = [c for c in nest.core if any(c == crow.name for crow in living)]
    return members + [name for name in everywhere if name not in members]
