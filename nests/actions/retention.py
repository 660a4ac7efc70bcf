"""Retention: deleting what is older than the owner keeps (docs/OPERATING.md "Retention").

`prune(days)` removes events, Jev tags, strikes and post counts, finished lists (with
their items, sorties and banter), finished background-task results and flights older
than `days` days, and never anything of a list still open: a list's events and flights
go only with the list itself, once it has been finished for longer than `days`. Other
apps keep more through `keep_events` (an open owner decision keeps its events).

Pruned event ids are recorded per stream (flock/stream/retention.py), so an SSE client
whose cursor points into the pruned past is told with `stream.reset`. `manage.py prune`
runs it by hand; CROWS_RETENTION_DAYS > 0 runs it daily as a scheduled task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

from flock.models import Event, Flight, JevTag
from flock.stream.retention import prune_marks, record_prune_marks
from nests.models import TodoList
from trust.models import Decision, Post, Strike

log = logging.getLogger("crows.retention")

BATCH = 2000
MAX_DAYS = 36500

# Each returns a Q of events that must be kept whatever their age (an app's open work).
_event_keepers: list[Callable[[], Q]] = []


def keep_events(keeper: Callable[[], Q]) -> Callable[[], Q]:
    """Register a filter of events that prune must never delete (e.g. open decisions)."""
    if keeper not in _event_keepers:
        _event_keepers.append(keeper)
    return keeper


def _open_decisions() -> Q:
    """An owner decision still open keeps its events (decision.opened, the quarantine)."""
    open_ids = list(Decision.objects.filter(status="open").values_list("decision_id", "crow"))
    if not open_ids:
        return Q(pk__in=[])
    return Q(payload__decision_id__in=[d for d, _ in open_ids]) | Q(
        name="crow.quarantined", payload__crow__in=[c for _, c in open_ids if c]
    )


keep_events(_open_decisions)


@dataclass
class PruneReport:
    cutoff: datetime
    dry_run: bool
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _pruned_lists(cutoff: datetime) -> QuerySet[TodoList]:
    return TodoList.objects.filter(status=TodoList.Status.FINISHED, finished_at__lt=cutoff)


def _kept_list_ids(cutoff: datetime) -> QuerySet:
    return TodoList.objects.exclude(id__in=_pruned_lists(cutoff).values("id")).values("list_id")


def doomed(cutoff: datetime) -> dict[str, QuerySet]:
    """What a prune at `cutoff` deletes, table by table (in deletion order)."""
    from django_tasks_db.compat import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    kept_lists = _kept_list_ids(cutoff)
    open_lists = list(TodoList.objects.filter(status=TodoList.Status.FLYING).values_list("list_id", flat=True))
    events = Event.objects.filter(created_at__lt=cutoff).exclude(list_key__in=kept_lists)
    for keeper in _event_keepers:
        # By id, not `exclude(keeper())`: a keeper reads JSON keys, and on an event without
        # the key SQL's NOT (NULL IN ...) is not true, so every such event would be kept.
        events = events.exclude(pk__in=Event.objects.filter(keeper()).values("pk"))
    tags = JevTag.objects.filter(created_at__lt=cutoff)
    for list_id in open_lists:
        tags = tags.exclude(subject__startswith=f"{list_id}-")
    return {
        "events": events,
        "flights": Flight.objects.filter(created_at__lt=cutoff).exclude(list_id__in=kept_lists),
        "jev tags": tags,
        "strikes": Strike.objects.filter(at__lt=cutoff, until__lt=timezone.now()),
        "post counts": Post.objects.filter(at__lt=min(cutoff, timezone.now() - timedelta(minutes=1))),
        "lists": _pruned_lists(cutoff),
        "task results": DBTaskResult.objects.filter(
            status__in=(TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED), finished_at__lt=cutoff
        ),
    }


def _delete_batch(model: type[Model], rows: QuerySet, ids: list) -> None:
    with transaction.atomic():
        if model is Event:
            # The marks commit with the deletion, so no stream sees the hole unexplained.
            record_prune_marks(prune_marks(rows.filter(id__in=ids)).items())
        model._default_manager.filter(pk__in=ids).delete()


def prune(
    older_than_days: int,
    *,
    dry_run: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> PruneReport:
    """Delete (or with `dry_run` only count) everything past retention, in batches.

    `progress(table, done, total)` is called after each batch, for a progress bar."""
    if not isinstance(older_than_days, int) or not 0 <= older_than_days <= MAX_DAYS:
        raise ValueError(f"older_than_days must be a whole number of days, 0–{MAX_DAYS}")
    cutoff = timezone.now() - timedelta(days=older_than_days)
    report = PruneReport(cutoff=cutoff, dry_run=dry_run)
    for table, rows in doomed(cutoff).items():
        total = rows.count()
        report.counts[table] = total
        if dry_run or not total:
            if progress:
                progress(table, total, total)
            continue
        done = 0
        while True:
            ids = list(rows.order_by("pk").values_list("pk", flat=True)[:BATCH])
            if not ids:
                break
            _delete_batch(rows.model, rows, ids)
            done += len(ids)
            if progress:
                progress(table, min(done, total), total)
        report.counts[table] = done
    return report

