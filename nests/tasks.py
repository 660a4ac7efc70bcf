"""The list pipeline's background tasks (Django Tasks, stored by django-tasks-db).

Each step of a list runs here, so a restart loses nothing: the queue is a table, an
interrupted task is re-queued at start-up, and every step is idempotent (it locks its
rows and finds its work done, or claimed by a live flight, and returns). A step that
trips over a locked database is retried after a pause; one that fails for any other
reason lands its sortie as a failure, so its item still ends. The pipeline queues them
through nests.actions.lists.queue, which NestsConfig.ready() wires to them.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import OperationalError
from django.tasks import TaskContext, task
from django.utils import timezone

# The pipeline's steps are looked up when a task runs, so a test may stand in for one.
from nests.actions import lists
from nests.actions.lists import banter

log = logging.getLogger("crows.lists")

RETRIES = 5
RETRY_PAUSE_S = 0.5
PRIORITY_RETRY = 30  # a retried step is already late


@task(takes_context=True)
def fly_sortie_task(context: TaskContext, sortie_pk: int, attempt: int = 0, owners: list[int] | None = None) -> str:
    """`owners` is not read: tasks queued by earlier servers carry the sortie's list and
    item, which the flight now finds in the statement that locks them."""
    try:
        # A retry flies again a sortie whose landing failed after take-off (its thread
        # has let go of it: flights.InAir), without a second take-off.
        return lists.fly_sortie(sortie_pk, run_id=context.task_result.id)
    except OperationalError as exc:
        if attempt < RETRIES:
            later = timezone.now() + timedelta(seconds=RETRY_PAUSE_S * (attempt + 1))
            fly_sortie_task.using(run_after=later, priority=PRIORITY_RETRY).enqueue(sortie_pk, attempt + 1)
            return f"retrying after {exc}"
        log.exception("sortie %s failed %d times", sortie_pk, attempt + 1)
        lists.abort_sortie(sortie_pk, error=f"the flock's database kept failing: {exc}")
        return "aborted"
    except Exception as exc:
        log.exception("sortie %s failed", sortie_pk)
        lists.abort_sortie(sortie_pk, error=f"the flock tripped over this flight ({type(exc).__name__})")
        return "aborted"


@task()
def finish_list_task(list_pk: int, attempt: int = 0) -> str:
    try:
        return lists.finish_list(list_pk).status
    except OperationalError:
        # A list must finish: keep trying while the database is unwell, backing off to at
        # most a minute between tries, rather than leave it open until a restart.
        pause = min(60.0, RETRY_PAUSE_S * 2 ** min(attempt, 10))
        later = timezone.now() + timedelta(seconds=pause)
        finish_list_task.using(run_after=later, priority=PRIORITY_RETRY).enqueue(list_pk, attempt + 1)
        if attempt >= RETRIES:
            log.warning("finishing list %s failed %d times; still retrying", list_pk, attempt + 1)
        return "retrying"


@task()
def speak_banter_task(banter_pk: int) -> str:
    # Banter is never worth a retry: a line that fails is dropped (and recovery drops
    # one left in the air), and list.finished waits for it only so long.
    try:
        return banter.speak_banter(banter_pk).status
    except Exception:
        log.exception("banter %s failed; dropped", banter_pk)
        banter.drop_banter(banter_pk, why="the flock tripped over it")
        return "dropped"

