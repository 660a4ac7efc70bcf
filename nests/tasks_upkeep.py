"""Boss's daily look at the flock (CROWS_IDLE_RETIRE_DAYS; nests/actions/chat/regulate.py):
idle crows are proposed for retirement, never retired."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.tasks import task
from django.utils import timezone
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from nests.actions.chat.idle import propose_idle_retirements

log = logging.getLogger("crows.upkeep")

REVIEW_EVERY = timedelta(days=1)


@task()
def idle_review_task() -> str:
    if not settings.CROWS_IDLE_RETIRE_DAYS:
        return "idle review is off"
    try:
        proposed = propose_idle_retirements()
        log.info("idle review: %d retirements proposed", len(proposed))
        return f"proposed {len(proposed)}"
    finally:
        # The next look is queued whatever happened to this one, so a failure never ends
        # the daily schedule.
        idle_review_task.using(run_after=timezone.now() + REVIEW_EVERY).enqueue()


WAITING = (TaskResultStatus.READY, TaskResultStatus.RUNNING)
FIRST_LOOK = timedelta(minutes=1)


def schedule_idle_review() -> bool:
    """Start-up: one daily idle review queued when CROWS_IDLE_RETIRE_DAYS is set (a review
    already queued is kept, so restarts never multiply it). Returns whether one was queued."""
    if not settings.CROWS_IDLE_RETIRE_DAYS:
        return False
    with transaction.atomic():
        waiting = DBTaskResult.objects.filter(task_path=idle_review_task.module_path, status__in=WAITING).exists()
        if not waiting:
            idle_review_task.using(run_after=timezone.now() + FIRST_LOOK).enqueue()
    return not waiting
