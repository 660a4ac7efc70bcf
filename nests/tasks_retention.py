"""The daily prune (CROWS_RETENTION_DAYS; nests/actions/retention.py), and keeping one queued."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from nests.actions.retention import prune

log = logging.getLogger("crows.retention")

PRUNE_EVERY = timedelta(days=1)


@task()
def prune_task() -> str:
    days = settings.CROWS_RETENTION_DAYS
    if not days:
        return "retention is off"
    try:
        report = prune(days)
        log.info("pruned past %d days: %s", days, report.counts)
        return f"pruned {report.total}"
    finally:
        # The next run is queued whatever happened to this one, so a failure never ends
        # the daily schedule.
        prune_task.using(run_after=timezone.now() + PRUNE_EVERY).enqueue()


def schedule_retention() -> bool:
    """Start-up: make sure one daily prune is queued when CROWS_RETENTION_DAYS is set.

    Runs on every server start (worker.on_start); a prune already queued is kept, so
    restarts never multiply the daily run. Returns whether one was queued now."""
    from django_tasks_db.compat import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    if not settings.CROWS_RETENTION_DAYS:
        return False
    with transaction.atomic():
        queued = DBTaskResult.objects.filter(
            task_path=prune_task.module_path, status__in=(TaskResultStatus.READY, TaskResultStatus.RUNNING)
        )
        if queued.exists():
            return False
        prune_task.using(run_after=timezone.now() + timedelta(minutes=1)).enqueue()
    return True
