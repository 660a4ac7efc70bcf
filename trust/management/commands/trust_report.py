"""`manage.py trust_report`: the trust ledger per holder and task type."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError

from flock import queries as flock_queries
from flock.management.cli import CrowsCommand
from trust.queries import trust_ledger


class Command(CrowsCommand):
    help = "Show every holder's trust per task type: level, streak, owner approvals and rejections."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--holder", metavar="NAME", help='one holder: "flock" or a crow')
        parser.add_argument("--format", choices=("table", "json"), default="table", help="default: table")
        parser.add_argument("--all", action="store_true", help="also rows where nothing happened yet")

    def handle(self, *args: Any, **options: Any) -> None:
        ledger = trust_ledger([c.name for c in flock_queries.living_crows()])
        holders = ledger["holders"]
        if options["holder"]:
            match = next((h for h in holders if h.lower() == options["holder"].strip().lower()), None)
            if match is None:
                raise CommandError(f"unknown holder {options['holder']!r}; holders are the flock and the crows")
            holders = {match: holders[match]}
        if options["format"] == "json":
            self.stdout.write(json.dumps({**ledger, "holders": holders}, indent=2))
            return
        rows = []
        for holder, types in holders.items():
            for task_type, row in types.items():
                if not options["all"] and not (row["level"] or row["streak"] or row["approvals"] or row["rejections"]):
                    continue
                rows.append((holder, task_type, f"{row['level']} {row['level_name']}", row["streak"], row["approvals"], row["rejections"]))
        self.table(
            f"Trust ledger ({ledger['streak_to_promote']} owner approvals in a row climb one level)",
            ["holder", "task type", "level", "streak", "approvals", "rejections"],
            rows,
        )
        if not rows:
            self.stdout.write("every holder is a stranger with no verdicts yet (--all lists every row)")
