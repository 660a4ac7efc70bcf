"""`manage.py expire_approvals`: sweep what is past its deadline now, instead of waiting
for the scheduled timeouts (after a long stop, or when the worker runs elsewhere).

Each sweeper is a function returning the ids it closed; owner decisions join the list
with one more entry in SWEEPERS."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import timezone

from flock.management.cli import CrowsCommand
from trust.actions import expire_decision, time_out_approval
from trust.models import Approval, Decision


def overdue_approvals() -> list[tuple[str, str, int]]:
    return list(
        Approval.objects.filter(verdict__isnull=True, deadline__lte=timezone.now())
        .order_by("deadline", "id")
        .values_list("item_id", "target", "attempt")
    )


def expire_overdue_approvals(*, dry_run: bool = False, progress: Any = None) -> list[str]:
    """Time out every approval past its deadline (verdict `timeout`, the fail-safe)."""
    closed = []
    for item_id, target, attempt in overdue_approvals():
        if dry_run or time_out_approval(item_id, target=target, attempt=attempt) is not None:
            closed.append(f"{item_id} ({target})")
        if progress:
            progress.advance()
    return closed


def overdue_decisions() -> list[str]:
    return list(
        Decision.objects.filter(status="open", deadline__lte=timezone.now())
        .order_by("deadline", "id")
        .values_list("decision_id", flat=True)
    )


def expire_overdue_decisions(*, dry_run: bool = False, progress: Any = None) -> list[str]:
    """Close every open decision past its deadline as `timeout` (the crow stays quarantined)."""
    closed = []
    for decision_id in overdue_decisions():
        if dry_run or expire_decision(decision_id) is not None:
            closed.append(decision_id)
        if progress:
            progress.advance()
    return closed


# (what it sweeps, how many are due, the sweep): one entry per kind of deadline.
SWEEPERS: list[tuple[str, Callable[[], int], Callable[..., list[str]]]] = [
    ("approvals", lambda: len(overdue_approvals()), expire_overdue_approvals),
    ("decisions", lambda: len(overdue_decisions()), expire_overdue_decisions),
]


class Command(CrowsCommand):
    help = "Close every approval (and owner decision) past its deadline now, with the fail-safe outcome."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--dry-run", action="store_true", help="list what is overdue; close nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        dry = options["dry_run"]
        for what, due, sweep in SWEEPERS:
            with self.progress(f"expiring {what}", total=due()) as bar:
                closed = sweep(dry_run=dry, progress=bar)
            verb = "would time out" if dry else "timed out"
            self.stdout.write(f"{what}: {verb} {len(closed)}" + (f": {', '.join(closed)}" if closed else ""))
