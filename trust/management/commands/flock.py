"""`manage.py flock`: the crows at a glance, with status, role, model, trust per task
type and recent flights; `--crow NAME` for one crow's latest flights."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import CommandError
from django.db.models import Count, Q
from django.utils import timezone

from flock.management.cli import CrowsCommand, int_up_to
from flock.models import Crow, Flight
from flock.personas import TASK_TYPES
from trust.queries import FLOCK_HOLDER, trust_ledger

HOURS_MAX = 10 * 366 * 24
FLIGHTS_MAX = 10_000


def _ago(moment: Any) -> str:
    seconds = max(0, int((timezone.now() - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


class Command(CrowsCommand):
    help = "List the crows: status, role, model, trust per task type and recent flights."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--crow", metavar="NAME", help="one crow, with its latest flights")
        parser.add_argument("--retired", action="store_true", help="include retired crows")
        parser.add_argument("--hours", type=int_up_to(HOURS_MAX), default=24,
                            help=f"what counts as recent (default: 24, at most {HOURS_MAX:,}: ten years)")
        parser.add_argument("--flights", type=int_up_to(FLIGHTS_MAX), default=10,
                            help=f"flights listed with --crow (default: 10, at most {FLIGHTS_MAX:,})")

    def handle(self, *args: Any, **options: Any) -> None:
        crows = Crow.objects.order_by("id")
        if options["crow"]:
            crows = crows.filter(name__iexact=options["crow"].strip().lstrip("@"))
            if not crows.exists():
                raise CommandError(f"no crow named {options['crow']!r}; `manage.py flock` lists them")
        elif not options["retired"]:
            crows = crows.exclude(status=Crow.Status.RETIRED)
        roster = list(crows)
        since = timezone.now() - timedelta(hours=options["hours"])
        recent = {
            row["crow"]: row
            for row in Flight.objects.filter(created_at__gte=since, crow__in=[c.name for c in roster])
            .values("crow")
            .annotate(n=Count("id"), failed=Count("id", filter=Q(ok=False)))
        }
        last = {}
        for crow in roster:
            last[crow.name] = Flight.objects.filter(crow=crow.name).order_by("-id").first()
        ledger = trust_ledger([c.name for c in roster])["holders"]

        def trust_cells(holder: str) -> list[str]:
            return [str(ledger.get(holder, {}).get(t, {}).get("level", 0)) for t in TASK_TYPES]

        rows = []
        for crow in roster:
            r = recent.get(crow.name, {"n": 0, "failed": 0})
            flight = last[crow.name]
            latest = "never" if flight is None else f"{flight.task} {'ok' if flight.ok else 'failed'} {_ago(flight.created_at)}"
            rows.append([
                crow.name, crow.status, crow.role, crow.brain_spec, *trust_cells(crow.name),
                f"{r['n']} ({r['failed']} failed)", latest,
            ])
        if not options["crow"]:
            rows.append([FLOCK_HOLDER, "", "(triage)", "", *trust_cells(FLOCK_HOLDER), "", ""])
        self.table(
            f"The flock: trust 0 stranger, 1 regular, 2 trusted; flights in the last {options['hours']}h",
            ["crow", "status", "role", "model", *TASK_TYPES, "flights", "last flight"],
            rows,
        )
        if options["crow"]:
            crow = roster[0]
            flights = Flight.objects.filter(crow=crow.name).order_by("-id")[: options["flights"]]
            self.table(
                f"{crow.name}'s latest flights",
                ["when", "task", "type", "model", "ok", "tokens in/out", "ms", "list/nest"],
                [
                    (_ago(f.created_at), f.task, f.task_type, f"{f.provider}:{f.model}", "yes" if f.ok else f"no: {f.error[:60]}",
                     f"{f.tokens_in}/{f.tokens_out}", round(f.latency_ms), f.list_id or f.nest_id)
                    for f in flights
                ],
            )
