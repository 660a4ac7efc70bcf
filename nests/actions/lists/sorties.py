"""Planning and cancelling sorties. A planned sortie's task is queued in the transaction
that planned it, so the plan and its work commit (or vanish) together."""

from __future__ import annotations

import os
import socket
import uuid

from flock.worker import enqueue_many
from nests.actions.lists import queue
from nests.models import Item, Sortie

# Who is flying a sortie: this process. After a restart, a sortie still FLYING under
# another process's id was left by the dead one and is taken over; one under this id is
# in the air in a sibling thread (flights.IN_AIR), and a duplicate task leaves it alone,
# unless its thread let go of it (a landing that met a dead database) and it flies again.
BOOT_ID = f"{socket.gethostname()[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


# Work already under way goes first: a list's later steps outrank the triage of lists
# that came after it, so a busy flock finishes lists one after another instead of
# triaging everything before answering anything.
# Keyed by str: looked up with `sortie.role`, a str field (the Role members are str).
PRIORITY: dict[str, int] = {Sortie.Role.SENTRY: 0, Sortie.Role.WORKER: 10, Sortie.Role.ELDER: 20}
FINISH_PRIORITY = 30
BANTER_PRIORITY = 25  # one short call; finishing sooner beats waiting out the banter wait


def queue_sortie(sortie: Sortie) -> None:
    queue.fly_sortie_task().using(priority=PRIORITY[sortie.role]).enqueue(sortie.pk)


def plan_sorties(item: Item, plans: list[dict[str, object]]) -> list[Sortie]:
    """Plan several sorties of `item` (each `plans` entry is plan_sortie's keywords) and
    queue their flights: one INSERT for the sorties and one for their tasks, however many
    there are."""
    sorties = [
        Sortie(item=item, todo_list_id=item.todo_list_id, attempt=item.attempt, **plan)
        for plan in plans
    ]
    return queue_planned(sorties)


def queue_planned(sorties: list[Sortie]) -> list[Sortie]:
    """Insert new sorties in one statement and queue their flights in one more (per
    priority), as plan_sortie does one at a time."""
    fly_sortie_task = queue.fly_sortie_task()
    Sortie.objects.bulk_create(sorties)
    for priority in dict.fromkeys(PRIORITY[s.role] for s in sorties):
        enqueue_many(fly_sortie_task.using(priority=priority), [(s.pk,) for s in sorties if PRIORITY[s.role] == priority])
    return sorties


def plan_sortie(
    item: Item,
    *,
    role: str,
    crow: str,
    task: str,
    borrowed: bool = False,
    subtask: str = "",
    n: int = 0,
) -> Sortie:
    sortie = Sortie.objects.create(
        item=item,
        todo_list_id=item.todo_list_id,
        role=role,
        crow=crow,
        borrowed=borrowed,
        task=task,
        subtask=subtask,
        n=n,
        attempt=item.attempt,
    )
    queue_sortie(sortie)
    return sortie


def cancel_unflown(item: Item) -> int:
    """Cancel the item's sorties that have not taken off (its item has ended)."""
    return Sortie.objects.filter(
        item=item, status__in=(Sortie.Status.PLANNED, Sortie.Status.WAITING)
    ).update(status=Sortie.Status.CANCELLED)
