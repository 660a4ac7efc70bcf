"""The daily prune (CROWS_RETENTION_DAYS; nests/actions/retention.py)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.tasks import task
from django.utils import timezone

log = logging.getLogger("crows.retention")

PRUNE_EVERY = timedelta(days=1)


@task()
def prune_task() -> str:
    from nests.actions.retention import prune

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
