"""Background tasks of the chatroom (Django's Tasks API, stored by django-tasks-db).

A crow invocation is a task row written in the same transaction as the message that
called for it, so it runs exactly when that message is committed, and survives a restart.
The chat core queues them through nests.actions.chat.queue, which NestsConfig.ready()
wires to `enqueue_invocation` and `enqueue_check` here (the chat core never imports this
module: the tasks run it).
"""

from __future__ import annotations

from datetime import datetime

from django.tasks import task

from nests.actions.chat.crows import invoke_crow
from nests.actions.chat.timers import check_expectation


@task()
def run_invocation(invocation_id: int) -> None:
    invoke_crow(invocation_id)


@task()
def check_expectation_task(expectation_pk: int, due_iso: str = "") -> str:
    return check_expectation(expectation_pk, due_iso)


def enqueue_invocation(invocation_id: int) -> None:
    run_invocation.enqueue(invocation_id)


def enqueue_check(expectation_pk: int, due_at: datetime) -> None:
    # The task carries the due time it was scheduled for: a stale duplicate (an earlier
    # schedule, a start-up re-schedule) finds the row moved on and does nothing.
    check_expectation_task.using(run_after=due_at).enqueue(expectation_pk, due_at.isoformat())
