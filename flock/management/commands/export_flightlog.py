"""`manage.py export_flightlog --format csv|jsonl [--since WHEN] [--output FILE]`.

A FILE is written whole or not at all (flock/management/cli.py `output_text`)."""

from __future__ import annotations

import csv
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, cast

from django.core.management.base import CommandError
from django.utils import timezone

from flock.events import rfc3339
from flock.management.cli import CrowsCommand, output_text
from flock.models import Flight

FIELDS = (
    "id", "created_at", "crow", "provider", "model", "task", "task_type", "list_id", "item_id",
    "nest_id", "msg_id", "tokens_in", "tokens_out", "latency_ms", "ok", "error",
)
RELATIVE = re.compile(r"^(\d+)([dhm])$")


def parse_since(text: str) -> datetime:
    """`7d`, `12h`, `30m`, or an ISO date/time (UTC unless it says otherwise)."""
    text = text.strip()
    match = RELATIVE.fullmatch(text)
    if match:
        n, unit = int(match[1]), match[2]
        try:
            return timezone.now() - timedelta(**{{"d": "days", "h": "hours", "m": "minutes"}[unit]: n})
        except (OverflowError, ValueError):
            raise CommandError(f"--since {text} reaches back before the year 1; say less") from None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(f"--since must be like 7d, 12h, 30m or 2026-11-30[T12:00], got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def row(flight: Flight) -> dict[str, Any]:
    out = {f: getattr(flight, f) for f in FIELDS}
    out["created_at"] = rfc3339(flight.created_at)
    return out


class Command(CrowsCommand):
    help = "Export the flight log (one row per brain call) as CSV or JSON Lines, oldest first."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--format", choices=("csv", "jsonl"), default="csv", help="csv (default) or jsonl")
        parser.add_argument("--since", metavar="WHEN", help="only flights since: 7d, 12h, 30m or an ISO date/time")
        parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of standard output")

    def handle(self, *args: Any, **options: Any) -> None:
        flights = Flight.objects.order_by("id")
        if options["since"]:
            flights = flights.filter(created_at__gte=parse_since(options["since"]))
        total = flights.count()
        if not options["output"]:
            out = cast(IO[str], self.stdout._out) if hasattr(self.stdout, "_out") else sys.stdout
            self._export(flights, total, options["format"], out)
            return
        # Written beside the target and renamed into place: a failure leaves the old file whole.
        with output_text(Path(options["output"]), writing="exporting onto") as out:
            self._export(flights, total, options["format"], out)
        self.stdout.write(f"{total} flights written to {options['output']}")

    def _export(self, flights: Any, total: int, form: str, out: IO[str]) -> None:
        writer = csv.DictWriter(out, fieldnames=FIELDS) if form == "csv" else None
        if writer:
            writer.writeheader()
        with self.progress("exporting flights", total=total) as bar:
            for flight in flights.iterator(chunk_size=2000):
                if writer:
                    writer.writerow(row(flight))
                else:
                    out.write(json.dumps(row(flight), ensure_ascii=False) + "\n")
                bar.advance()
