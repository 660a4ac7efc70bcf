"""How items and lists end.

An item ends answered (its output approved or auto) or skipped with a reason. The list
ends with `list.finished` once every item has ended, no crow of the list is still in the
air, and banter still in flight has had at most CROWS_BANTER_WAIT_S to land.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from flock.db import action_atomic
from flock.events import emit
from nests.actions.lists import queue
from nests.actions.lists.sorties import FINISH_PRIORITY, cancel_unflown
from nests.models import Banter, Item, Sortie, TodoList
from nests.payloads import ItemSkipped, ListFinished
from trust.actions.locking import lock_event_log

# Reasons an item is skipped (docs/LISTS.md lists them with their causes).
BUDGET = "budget"
FAILURE = "failure"
TRIAGE_REJECTED = "triage rejected"
TRIAGE_TIMEOUT = "triage timeout"
OUTPUT_REJECTED = "output rejected"
OUTPUT_TIMEOUT = "output timeout"


def lock_list(pk: int) -> TodoList:
    lock_event_log()  # the one lock order: the event log's, then rows
    return TodoList.objects.select_for_update().get(pk=pk)


def lock_item(item_id: str) -> Item | None:
    """Lock an item with its list, in one statement and in the lists' one order (the
    list's row, then the item's: PostgreSQL locks a `FOR UPDATE OF` list's tables in the
    order it names them, as flights.lock_sortie relies on too). None when there is no
    such item."""
    lock_event_log()
    item = (
        Item.objects.select_related("todo_list")
        .select_for_update(of=("todo_list", "self"))
        .filter(item_id=item_id)
        .first()
    )
    return item


def skip_item(item: Item, *, reason: str) -> Item:
    """End `item` as skipped (it must be locked by the caller, with its list)."""
    with action_atomic():
        item.stage = Item.Stage.SKIPPED
        item.skip_reason = reason
        item.ended_at = timezone.now()
        item.save(update_fields=["stage", "skip_reason", "ended_at"])
        cancel_unflown(item)
        emit("item.skipped", ItemSkipped(item_id=item.item_id, reason=reason), list_id=item.todo_list.list_id)
        after_item_ended(item)
    return item


def mark_answered(item: Item, *, unsaved: Sequence[str] = ()) -> Item:
    """End `item` as answered: its output was approved, or trusted (auto). The item must
    be locked by the caller, with its list. `unsaved` names fields the caller set and
    leaves to this save (one UPDATE of the item instead of two)."""
    with action_atomic():
        item.stage = Item.Stage.ANSWERED
        item.ended_at = timezone.now()
        item.save(update_fields=["stage", "ended_at", *unsaved])
        after_item_ended(item)
    return item


def after_item_ended(item: Item) -> None:
    # The callers hold the list's row already (they lock the item with it: flights'
    # lock_sortie, lock_item), and `item.todo_list` is that locked row: not read again.
    todo = item.todo_list if Item.todo_list.is_cached(item) else lock_list(item.todo_list_id)
    # A SQLite landing read whether another item is open with its locks (flights._land_returning).
    others_open = getattr(item, "others_open", None)
    if others_open is None:
        others_open = todo.items.exclude(stage__in=Item.ENDED).exists()
    if others_open:
        return
    if todo.items_done_at is None:
        todo.items_done_at = timezone.now()
        todo.save(update_fields=["items_done_at"])
    queue_finish(todo)


def queue_finish(todo: TodoList, *, at: datetime | None = None) -> None:
    task = queue.finish_list_task().using(priority=FINISH_PRIORITY, run_after=at)
    task.enqueue(todo.pk)


def maybe_finish(todo: TodoList) -> None:
    """After a straggler lands (a crow of a skipped item, a banter line): the list may be
    ready to finish now."""
    if todo.status == TodoList.Status.FLYING and todo.items_done_at is not None:
        queue_finish(todo)


def finish_list(list_pk: int) -> TodoList:
    """Emit `list.finished` if the list is ready; idempotent, and safe to call early."""
    with transaction.atomic():
        todo = lock_list(list_pk)
        if todo.status == TodoList.Status.FINISHED:
            return todo
        if todo.items.exclude(stage__in=Item.ENDED).exists():
            return todo
        if todo.sorties.filter(status__in=(Sortie.Status.FLYING, Sortie.Status.WAITING, Sortie.Status.PLANNED)).exists():
            return todo  # its landing queues this again
        now = timezone.now()
        done_at = todo.items_done_at or now
        wait_until = done_at + timedelta(seconds=settings.CROWS_BANTER_WAIT_S)
        if todo.banter.filter(status=Banter.Status.FLYING).exists() and now < wait_until:
            # Banter never blocks for long: finish at the deadline at the latest, sooner
            # if the line lands first (its landing queues this again).
            queue_finish(todo, at=wait_until)
            return todo
        todo.status = TodoList.Status.FINISHED
        todo.finished_at = now
        if todo.items_done_at is None:
            todo.items_done_at = now
        todo.save(update_fields=["status", "finished_at", "items_done_at"])
        emit(
            "list.finished",
            ListFinished(tokens_used=todo.tokens_used, token_budget=todo.token_budget),
            list_id=todo.list_id,
        )
    return todo
