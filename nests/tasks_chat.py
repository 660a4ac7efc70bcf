"""Background tasks of the chatroom (Django's Tasks API, stored by django-tasks-db).

A crow invocation is a task row written in the same transaction as the message that
called for it, so it runs exactly when that message is committed, and survives a restart.
"""

from __future__ import annotations

from django.tasks import task


@task()
def run_invocation(invocation_id: int) -> None:
    from nests.actions.chat.crows import invoke_crow

    invoke_crow(invocation_id)


@task()
def check_expectation_task(expectation_pk: int, due_iso: str = "") -> str:
    from nests.actions.chat.expectations import check_expectation

    return check_expectation(expectation_pk, due_iso)
