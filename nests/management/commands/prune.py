"""`manage.py prune --older-than DAYS [--dry-run]`: delete history past retention.

Never anything of a list still open (docs/OPERATING.md "Retention")."""

from __future__ import annotations

from typing import Any

from flock.management.cli import CrowsCommand, positive_int
from nests.actions.retention import MAX_DAYS, prune


def days(text: str) -> int:
    import argparse

    value = positive_int(text)
    if value > MAX_DAYS:
        raise argparse.ArgumentTypeError(f"at most {MAX_DAYS} days, got {value}")
    return value


class Command(CrowsCommand):
    help = (
        "Delete events, Jev tags, strikes, finished lists, finished task results and flights older "
        "than DAYS days; never anything of a list still open. Open SSE clients whose cursor falls in "
        "the pruned range get a stream.reset event."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--older-than", type=days, required=True, metavar="DAYS", help="age in whole days (0 = everything before now)")
        parser.add_argument("--dry-run", action="store_true", help="count what would go; delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        dry = options["dry_run"]
        with self.progress("pruning") as bar:

            def progress(table: str, done: int, total: int) -> None:
                bar.update(description=f"pruning {table}", completed=done, total=total or 1)

            report = prune(options["older_than"], dry_run=dry, progress=progress)
        self.table(
            f"{'Would delete (dry run)' if dry else 'Deleted'}: older than {report.cutoff:%Y-%m-%d %H:%M} UTC",
            ["what", "rows"],
            list(report.counts.items()),
        )
        self.stdout.write(f"{report.total} rows {'would be deleted; nothing written (dry run)' if dry else 'deleted'}")
