"""Flying an item again with the owner's note (docs/REVIEW.md "Retry").

A rejected, timed-out, failed, over-budget or overruled item can be retried: the item
keeps its id and becomes its next attempt, with its own sorties, approvals and verdicts
(the earlier attempt's stay in the record), and the note goes into the prompt of every
crow of the attempt, the Sentry's triage included. A finished list opens again for the
attempt and ends with a second `list.finished`.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from flock.errors import BadInput, Conflict, NotFound
from flock.events import emit
from flock.models import Crow
from nests.actions.lists.ending import lock_list
from nests.actions.lists.sorties import plan_sortie
from nests.models import Item, Sortie, TodoList
from nests.payloads import ItemRetried
from trust.models import Target, Verdict

NOTE_MAX_CHARS = 2000
MAX_ATTEMPTS = 10


def check_note(note: Any) -> str:
    if note is None:
        return ""
    if not isinstance(note, str):
        raise BadInput(f"note must be a string, got {type(note).__name__}")
    note = note.strip()
    if len(note) > NOTE_MAX_CHARS:
        raise BadInput(f"note is {len(note):,} characters long; at most {NOTE_MAX_CHARS:,}")
    return note


def _overruled(item: Item) -> bool:
    return Verdict.objects.filter(
        item_id=item.item_id, target=Target.OUTPUT, attempt=item.attempt, overruled_at__isnull=False
    ).exists()


def retry_item(item_id: str, *, note: Any = None, by: str = "owner") -> Item:
    """Start the item's next attempt. NotFound for an unknown item; Conflict while it is
    still under way, or when it was answered and not overruled (nothing to retry)."""
    note = check_note(note)
    item_pk = Item.objects.filter(item_id=item_id).values_list("todo_list_id", flat=True).first()
    if item_pk is None:
        raise NotFound(f"no such item: {item_id[:40]!r}")
    sentry = Crow.objects.filter(role=Crow.Role.SENTRY).values_list("name", flat=True).first() or "Sentry"
    with transaction.atomic():
        todo = lock_list(item_pk)
        item = Item.objects.select_for_update().get(item_id=item_id)
        item.todo_list = todo
        if not item.ended:
            raise Conflict(f"{item_id} is still under way ({item.stage}); retry it once it has ended")
        if item.stage == Item.Stage.ANSWERED and not _overruled(item):
            raise Conflict(f"{item_id} was answered and approved; overrule the answer first to fly it again")
        if item.attempt >= MAX_ATTEMPTS:
            raise Conflict(f"{item_id} has been flown {item.attempt} times, the most an item may be")
        previous = {"stage": item.stage, "skip_reason": item.skip_reason}
        item.attempt += 1
        item.owner_note = note
        item.stage = Item.Stage.TRIAGE
        item.mode = item.task_type = item.reason = item.answer = item.skip_reason = ""
        item.subtasks, item.crows = [], []
        # The item's budget is per attempt (its sorties of this attempt, summed); the
        # list's keeps counting every attempt.
        item.ended_at = None
        item.save()
        reopened = todo.status == TodoList.Status.FINISHED
        todo.status = TodoList.Status.FLYING
        todo.finished_at = None
        todo.items_done_at = None
        todo.save(update_fields=["status", "finished_at", "items_done_at"])
        emit(
            "item.retried",
            ItemRetried(
                item_id=item.item_id, attempt=item.attempt, note=note, by=by,
                previous=previous["skip_reason"] or "overruled", reopened=reopened,
            ),
            list_id=todo.list_id,
        )
        plan_sortie(item, role=Sortie.Role.SENTRY, crow=sentry, task="triage")
    return item
