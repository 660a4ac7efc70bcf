"""`manage.py prune --older-than DAYS [--dry-run] [--yes]`: delete history past retention.

Never anything of a list still open (docs/OPERATING.md "Retention"). It prints what it
will delete before deleting it, and a cut that would take everything finished (as much
as `--older-than 0`, a typo for 90 say) is asked about first: on a terminal it waits for
`yes`; without one it needs `--yes`."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError

from flock.management.cli import CrowsCommand, positive_int
from nests.actions.retention import MAX_DAYS, PruneReport, prune


def days(text: str) -> int:
    import argparse

    value = positive_int(text)
    if value > MAX_DAYS:
        raise argparse.ArgumentTypeError(f"at most {MAX_DAYS} days, got {value}")
    return value


def takes_everything(plan: PruneReport, older_than_days: int) -> bool:
    """Whether the cut deletes all finished history: as much as a cut at this moment."""
    if not plan.total:
        return False
    return older_than_days == 0 or plan.counts == prune(0, dry_run=True).counts


class Command(CrowsCommand):
    help = (
        "Delete events, Jev tags, strikes, finished lists, finished task results and flights older "
        "than DAYS days; never anything of a list still open. Open SSE clients whose cursor falls in "
        "the pruned range get a stream.reset event. A cut that would delete everything finished "
        "asks first (or needs --yes without a terminal)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--older-than", type=days, required=True, metavar="DAYS", help="age in whole days (0 = everything before now)")
        parser.add_argument("--dry-run", action="store_true", help="count what would go; delete nothing")
        parser.add_argument("--yes", action="store_true", help="do not ask, even when the cut takes everything finished")

    def handle(self, *args: Any, **options: Any) -> None:
        older_than = options["older_than"]
        dry = options["dry_run"]
        plan = prune(older_than, dry_run=True)
        self.table(
            f"{'Would delete (dry run)' if dry else 'Will delete'}: older than {plan.cutoff:%Y-%m-%d %H:%M} UTC",
            ["what", "rows"],
            list(plan.counts.items()),
        )
        if dry:
            self.stdout.write(f"{plan.total} rows would be deleted; nothing written (dry run)")
            return
        if not plan.total:
            self.stdout.write("0 rows deleted: nothing is past retention")
            return
        if takes_everything(plan, older_than) and not options["yes"]:
            self._confirm(plan, older_than)
        with self.progress("pruning") as bar:

            def progress(table: str, done: int, total: int) -> None:
                bar.update(description=f"pruning {table}", completed=done, total=total or 1)

            report = prune(older_than, progress=progress)
        self.stdout.write(f"{report.total} rows deleted")

    def _confirm(self, plan: PruneReport, older_than: int) -> None:
        what = (
            f"--older-than {older_than} deletes all finished history ({plan.total} rows: every finished "
            "list, and every event, flight and tag no open work keeps)"
        )
        if not sys.stdin.isatty():
            raise CommandError(f"{what}; nothing deleted: run it again with --yes to confirm")
        self.stdout.write(f"{what}. Type yes to delete: ", ending="")
        self.stdout.flush()
        if sys.stdin.readline().strip().lower() not in ("yes", "y"):
            raise CommandError("nothing deleted: not confirmed")
