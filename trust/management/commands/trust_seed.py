"""Make holders trusted through the ledger: `manage.py trust_seed` (everyone, every task
type, level 2). For benches, load tests and demos where the owner already trusts the
flock and wants auto verdicts. Each step is a ledger entry of source "seed"."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from flock import queries as flock_queries
from flock.personas import TASK_TYPES
from trust.actions import seed_trust
from trust.models import TRUSTED
from trust.queries import FLOCK_HOLDER


class Command(BaseCommand):
    help = "Record owner approvals until the given holders reach a trust level."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--holders", default="all", help='Comma-separated, or "all" (the flock and every crow).')
        parser.add_argument("--task-types", default="all", help=f"Comma-separated from {', '.join(TASK_TYPES)}, or all.")
        parser.add_argument("--level", type=int, default=TRUSTED)

    def handle(self, *args: Any, holders: str, task_types: str, level: int, **options: Any) -> None:
        names = (
            [FLOCK_HOLDER, *(c.name for c in flock_queries.living_crows())]
            if holders == "all"
            else [h.strip() for h in holders.split(",") if h.strip()]
        )
        types = list(TASK_TYPES) if task_types == "all" else [t.strip() for t in task_types.split(",") if t.strip()]
        unknown = [t for t in types if t not in TASK_TYPES]
        if unknown:
            raise CommandError(f"unknown task types: {', '.join(unknown)}")
        appended = sum(seed_trust(h, task_type=t, level=level) for h in names for t in types)
        self.stdout.write(f"{len(names)} holder(s) x {len(types)} task type(s) at level >= {level}; {appended} entries appended")
