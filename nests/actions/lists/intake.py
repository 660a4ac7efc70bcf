"""Taking a list in: POST /api/lists.

Validation comes first and a bad body never counts as a post; then the nest (404); then
the requester's rate (429, a strike, `requester.pranked` to its flying lists); only then
is anything created. The list, its items, the Sentry's triage sorties, `list.started`
and the queued triage tasks commit in one transaction, so a list exists on the stream
from its first event and its work survives a restart from the start.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from flock.errors import BadInput, NotFound
from flock.events import emit
from flock.models import Crow
from flock.vocab import OWNER
from nests.actions.lists.sorties import queue_planned
from nests.actions.rooms import TODO_NEST
from nests.models import Item, Nest, Sortie, TodoList
from nests.payloads import ListItem, ListStarted
from trust.actions import admit_post, poster_key

ITEM_MAX_CHARS = 2000
ITEMS_MAX = 20
REQUESTER_MAX_CHARS = 80

# A leading bullet or number needs a space (or the line's end) after it, so "1.5 kg of
# flour" and "-5 degrees" keep their numbers; a checkbox may follow a bullet.
_BULLET = re.compile(r"^(?:[-*+]|\d{1,4}[.)])(?:\s+|$)")
_CHECKBOX = re.compile(r"^\[[ xX]\](?:\s+|$)?")
_LIST_ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def split_items(text: Any) -> list[str]:
    """One item per non-empty line, bullets stripped (docs/LISTS.md)."""
    if text is None:
        raise BadInput("text is required: the todo list, one item per line")
    if not isinstance(text, str):
        raise BadInput(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise BadInput("text is empty: write at least one item")
    items: list[str] = []
    for line in text.splitlines():
        item = _CHECKBOX.sub("", _BULLET.sub("", line.strip()), count=1).strip()
        if not item:
            continue
        items.append(item)
        if len(item) > ITEM_MAX_CHARS:
            raise BadInput(
                f"item {len(items)} is {len(item):,} characters long; an item may have at most {ITEM_MAX_CHARS:,}"
            )
    if not items:
        raise BadInput("text has no items: every line is empty or only a bullet")
    if len(items) > ITEMS_MAX:
        raise BadInput(f"the list has {len(items)} items; a list may have at most {ITEMS_MAX}")
    return items


def _check_requester(requester: Any) -> str:
    if requester is None:
        raise BadInput("requester is required")
    if not isinstance(requester, str):
        raise BadInput(f"requester must be a string, got {type(requester).__name__}")
    requester = requester.strip()
    if not requester:
        raise BadInput("requester must not be empty")
    if len(requester) > REQUESTER_MAX_CHARS:
        raise BadInput(f"requester may have at most {REQUESTER_MAX_CHARS} characters")
    return requester


def _find_nest(nest_id: Any) -> Nest:
    if nest_id is None:
        nest_id = TODO_NEST
    if not isinstance(nest_id, str):
        raise BadInput(f"nest_id must be a string, got {type(nest_id).__name__}")
    nest_id = nest_id.strip() or TODO_NEST
    nest = Nest.objects.exclude(kind=Nest.Kind.DIRECT).filter(nest_id=nest_id).first()
    if nest is None:
        raise NotFound(f"no such nest: {nest_id[:64]!r}")
    return nest


def new_list_id() -> str:
    """`L` and seven base-36 characters: short, and safe as a stream key and in an item_id."""
    return "L" + "".join(secrets.choice(_LIST_ID_ALPHABET) for _ in range(7))


def post_list(text: Any, *, requester: Any, nest_id: Any = None) -> TodoList:
    """Accept a todo list: create it, announce it and queue the Sentry's triage per item."""
    items = split_items(text)
    requester = _check_requester(requester)
    nest = _find_nest(nest_id)
    # The owner's own lists go by the owner's limit, never a requester's prank.
    admit_post(poster_key(owner=requester == OWNER, requester=requester), kind="list")

    sentry = Crow.objects.filter(role=Crow.Role.SENTRY).values_list("name", flat=True).first() or "Sentry"
    for _ in range(5):
        try:
            with transaction.atomic():
                todo = TodoList.objects.create(
                    list_id=new_list_id(),
                    requester=requester,
                    nest_id=nest.nest_id,
                    text=text,
                    token_budget=settings.CROWS_LIST_TOKEN_BUDGET,
                )
                # Set-based: one INSERT for the items, one for the Sentry's sorties and
                # one for their tasks, however long the list.
                rows = Item.objects.bulk_create(
                    [Item(todo_list=todo, n=n, item_id=f"{todo.list_id}-{n}", text=item)
                     for n, item in enumerate(items, start=1)]
                )
                emit(
                    "list.started",
                    ListStarted(
                        items=[ListItem(item_id=r.item_id, text=r.text) for r in rows], requester=requester,
                        nest_id=nest.nest_id,
                    ),
                    list_id=todo.list_id,
                )
                queue_planned([
                    Sortie(item=row, todo_list_id=todo.pk, attempt=row.attempt, role=Sortie.Role.SENTRY,
                           crow=sentry, task="triage")
                    for row in rows
                ])
            return todo
        except IntegrityError:
            # Two lists drew the same id; draw again (1 in 78 billion per pair).
            continue
    raise RuntimeError("could not draw a free list id")
