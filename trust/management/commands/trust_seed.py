"""Make holders trusted through the ledger, for a flock the owner already trusts (benches,
load tests, demos): `manage.py trust_seed --holder Pepper --task-types code --level 2`,
or `--all` for the flock and every living crow. Nothing is trusted by default: a holder
or `--all` is required. Each step is a ledger entry of source "seed"; `--dry-run` shows
what would be appended and writes nothing."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import CommandError

from flock import queries as flock_queries
from flock.errors import CrowsError
from flock.management.cli import CrowsCommand
from flock.personas import TASK_TYPES
from trust.actions import seed_trust
from trust.models import LEVEL_NAMES, STRANGER, TRUSTED
from trust.queries import FLOCK_HOLDER, trust_balance


def entries_needed(holder: str, task_type: str, level: int) -> tuple[int, int]:
    """(current level, ledger entries seed_trust would append to reach `level`)."""
    current, streak = trust_balance(holder, task_type)
    start, needed = current, 0
    while current < level:
        streak += 1
        needed += 1
        if streak >= settings.CROWS_TRUST_STREAK:
            current, streak = current + 1, 0
    return start, needed


class Command(CrowsCommand):
    help = (
        "Record owner approvals (ledger source 'seed') until the given holders reach a trust "
        "level. Needs --holder NAME[,NAME] or --all; nothing is seeded by default."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--holder", "--holders", action="append", default=[], metavar="NAME[,NAME]",
            help='a holder: "flock" or a living crow\'s name; repeat or separate with commas ("all" = --all)',
        )
        parser.add_argument("--all", action="store_true", help="the flock and every living crow")
        parser.add_argument(
            "--task-types", default="all", metavar="TYPES",
            help=f"comma-separated from {', '.join(TASK_TYPES)}, or all (default: all)",
        )
        parser.add_argument(
            "--level", type=int, default=TRUSTED, choices=sorted(LEVEL_NAMES),
            help=f"the level to reach: {', '.join(f'{k} {v}' for k, v in LEVEL_NAMES.items())} (default: {TRUSTED})",
        )
        parser.add_argument("--dry-run", action="store_true", help="show what would be appended; write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        named = [h.strip() for value in options["holder"] for h in value.split(",") if h.strip()]
        if options["all"] and named:
            # Either names or everyone: a typo'd command must not trust the whole flock.
            raise CommandError("give --holder NAME or --all, not both")
        everyone = options["all"] or "all" in named
        living = [c.name for c in flock_queries.living_crows()]
        if everyone:
            holders = [FLOCK_HOLDER, *living]
        elif named:
            by_lower = {n.lower(): n for n in [FLOCK_HOLDER, *living]}
            unknown = [h for h in named if h.lower() not in by_lower]
            if unknown:
                raise CommandError(
                    f"unknown holder(s): {', '.join(unknown)}; a holder is \"flock\" or a living crow "
                    f"({', '.join(living)})"
                )
            holders = list(dict.fromkeys(by_lower[h.lower()] for h in named))
        else:
            raise CommandError("say whose trust to seed: --holder NAME (or several) or --all")
        text = options["task_types"]
        types = list(TASK_TYPES) if text == "all" else [t.strip() for t in text.split(",") if t.strip()]
        unknown_types = [t for t in types if t not in TASK_TYPES]
        if unknown_types or not types:
            raise CommandError(f"unknown task types: {', '.join(unknown_types) or text!r}; known: {', '.join(TASK_TYPES)}, all")
        level = options["level"]
        if not STRANGER <= level <= TRUSTED:  # argparse choices already say so; kept for call_command(level=...)
            raise CommandError(f"level must be {STRANGER}–{TRUSTED}")

        plan = [(h, t, *entries_needed(h, t, level)) for h in holders for t in types]
        if options["dry_run"]:
            self.table(
                f"dry run: seeding to level {level} ({LEVEL_NAMES[level]}) would append",
                ["holder", "task type", "level now", "entries"],
                [(h, t, f"{now} {LEVEL_NAMES[now]}", n) for h, t, now, n in plan if n],
            )
            self.stdout.write(f"{sum(p[3] for p in plan)} entries would be appended; nothing written (dry run)")
            return
        appended = 0
        with self.progress("seeding trust", total=len(plan)) as bar:
            for holder, task_type, _, _ in plan:
                try:
                    appended += seed_trust(holder, task_type=task_type, level=level, by="trust_seed")
                except CrowsError as exc:
                    raise CommandError(exc.message) from None
                bar.advance()
        self.stdout.write(
            f"{len(holders)} holder(s) x {len(types)} task type(s) at level >= {level}; {appended} entries appended"
        )
