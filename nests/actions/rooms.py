"""Creating rooms: nests the owner (or Boss) makes, the open `todo` nest, direct chats."""

from __future__ import annotations

import re

from django.conf import settings
from django.db import IntegrityError, transaction

from flock import queries as flock_queries
from flock.errors import BadInput, Conflict
from flock.events import emit
from flock.models import Crow
from nests import queries
from nests.models import Nest
from nests.payloads import NestCreated

TODO_NEST = "todo"
DIRECT_PREFIX = "dm-"
NAME_MAX = 40
# A name needs a letter or digit of its own in a-z, A-Z, 0-9, as the API document's pattern
# says (nests/schemas.py): it then always has a slug. Judged before folding, so a name of
# accented letters alone ("Éé", which folds to "ee") is not taken where the document refuses it.
NAME_PATTERN = r"^[^\u0000]*[A-Za-z0-9][^\u0000]*$"
MIN_CORE, MAX_CORE = 1, 8


def ensure_todo_nest() -> Nest:
    nest, _ = Nest.objects.get_or_create(
        nest_id=TODO_NEST, defaults={"name": "todo", "kind": Nest.Kind.OPEN, "core": []}
    )
    return nest


def create_nest(name: object, *, crows: object, created_by: str = "owner") -> Nest:
    """Create a nest with its core crows, under the guardrails of docs/CHATROOM.md (Rooms)."""
    if not isinstance(name, str):
        raise BadInput("name must be a string")
    name = name.strip()
    if not 1 <= len(name) <= NAME_MAX:
        raise BadInput(f"name must be 1–{NAME_MAX} characters after trimming, got {len(name)}")
    if not re.search(r"[A-Za-z0-9]", name):
        raise BadInput("name must contain at least one Latin letter or digit: a nest_id is made of a-z, 0-9 and -")
    nest_id = queries.nest_slug(name)
    if not isinstance(crows, list) or not all(isinstance(c, str) for c in crows):
        raise BadInput("crows must be a list of crow names")
    if not MIN_CORE <= len(crows) <= MAX_CORE:
        raise BadInput(f"a nest needs {MIN_CORE}–{MAX_CORE} core crows, got {len(crows)}")
    if len(set(crows)) != len(crows):
        dupes = sorted({c for c in crows if crows.count(c) > 1})
        raise BadInput(f"crows must not repeat: {', '.join(dupes)}")
    roster = flock_queries.roster_names()
    strangers = [c for c in crows if c not in roster]
    if strangers:
        raise BadInput(
            f"not in the roster: {', '.join(strangers)} (the roster is {', '.join(roster)})"
        )
    silent = queries.direct_chat_crow(nest_id)
    if silent is not None and queries.silent_refusal(silent):
        raise BadInput(queries.silent_refusal(silent))
    if nest_id.startswith(DIRECT_PREFIX):
        raise Conflict(f"nest ids starting with {DIRECT_PREFIX!r} are kept for direct chats")

    with transaction.atomic():
        # Lock the nest rows we count, so two creations cannot both pass the cap.
        count = Nest.objects.select_for_update().exclude(kind=Nest.Kind.DIRECT).count()
        if Nest.objects.filter(nest_id=nest_id).exists():
            raise Conflict(f"a nest with id {nest_id!r} already exists")
        if count >= settings.CROWS_MAX_NESTS:
            raise BadInput(f"the flock already has {count} nests, the most it keeps")
        try:
            with transaction.atomic():
                nest = Nest.objects.create(nest_id=nest_id, name=name, core=list(crows), created_by=created_by)
        except IntegrityError:
            raise Conflict(f"a nest with id {nest_id!r} already exists") from None
        emit(
            "nest.created",
            NestCreated(nest_id=nest.nest_id, name=nest.name, crows=nest.core, created_by=created_by),
        )
    return nest


def ensure_direct_chat(crow_name: str) -> Nest:
    """The owner's direct chat with one crow, created on first use. The Sentry and the
    Elder have none: BadInput, naming the rule."""
    crow = Crow.objects.filter(name=crow_name).first()
    refusal = queries.silent_refusal(crow) if crow is not None else ""
    if refusal:
        raise BadInput(refusal)
    nest_id = f"{DIRECT_PREFIX}{crow_name.lower()}"
    with transaction.atomic():
        nest, _ = Nest.objects.get_or_create(
            nest_id=nest_id,
            defaults={"name": f"{crow_name} (direct)", "kind": Nest.Kind.DIRECT, "core": [crow_name]},
        )
    return nest
