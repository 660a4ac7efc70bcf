"""Shared steps for the list pipeline's unit tests: build state by calling actions, run
the queued tasks inline, read what the stream would carry."""

from __future__ import annotations

from typing import Any

from flock import worker
from flock.models import Event
from flock.personas import TASK_TYPES
from nests.actions import post_list
from nests.models import TodoList
from trust.actions import seed_trust
from trust.queries import FLOCK_HOLDER


def trust_everyone(task_types: tuple[str, ...] = TASK_TYPES) -> None:
    """The owner already trusts the flock's triage and every crow's output."""
    from flock.queries import living_crows

    for holder in [FLOCK_HOLDER, *(c.name for c in living_crows())]:
        for task_type in task_types:
            seed_trust(holder, task_type=task_type)


def run_list(text: str, *, requester: str = "ada", nest_id: str | None = None) -> TodoList:
    todo = post_list(text, requester=requester, nest_id=nest_id)
    worker.run_pending()
    todo.refresh_from_db()
    return todo


def stream(list_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The list's stream, as (event name, payload) in order."""
    return [(e.name, e.payload) for e in Event.objects.filter(list_key=list_id).order_by("id")]


def named(events: list[tuple[str, dict[str, Any]]], name: str) -> list[dict[str, Any]]:
    return [p for n, p in events if n == name]


def approve(item_id: str, target: str, yes: bool = True) -> None:
    from trust.actions import record_owner_verdict

    record_owner_verdict(item_id, target=target, approve=yes)
    worker.run_pending()


def let_approvals_time_out() -> None:
    """Move every deadline and every delayed task to the past, then run what is due."""
    from datetime import timedelta

    from django.utils import timezone
    from django_tasks_db.compat import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    from trust.models import Approval

    past = timezone.now() - timedelta(seconds=1)
    Approval.objects.update(deadline=past)
    DBTaskResult.objects.filter(status=TaskResultStatus.READY).update(run_after=past)
    worker.run_pending()


def break_brain(*names: str) -> None:
    """These crows' brains fail on every call (an unknown provider: a clear ok=False)."""
    from flock.models import Crow

    Crow.objects.filter(name__in=names).update(model="broken:none")
