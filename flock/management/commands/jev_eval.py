"""``manage.py jev_eval [FILE.jsonl] --question kind``: score a Jev question on a labelled file,
then leave one writer out of its corpus (the file may be left out: the second part alone)."""

from __future__ import annotations

from argparse import ArgumentParser, BooleanOptionalAction
from typing import Any

from django.core.management.base import CommandError

from flock.jev import JevError
from flock.jev.evaluate import (
    LATENCY_PASSES,
    evaluate_file,
    format_report,
    format_writer_report,
    writer_report,
)
from flock.management.cli import CrowsCommand, int_up_to


class Command(CrowsCommand):
    help = (
        'Score a Jev question on a JSONL file of {"text", "<label field>"} lines: accuracy, '
        "macro-F1, calibration error, confusion matrix and per-tag latency, then the leave-one-writer-out "
        "figures of the question's own corpus (docs/JEV.md)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "file", nargs="?", default=None,
            help="JSONL file, one labelled message a line (optional: without it, only the "
            "leave-one-writer-out figures)",
        )
        parser.add_argument("--question", default="kind", help="question to score (default: kind)")
        parser.add_argument("--mistakes", type=int_up_to(100_000), default=0, metavar="N",
                            help="list the first N mistakes")
        parser.add_argument(
            "--passes", type=int_up_to(100, minimum=1), default=LATENCY_PASSES, metavar="N",
            help="timed passes over the file (1 to 100)",
        )
        parser.add_argument(
            "--lowo",
            action=BooleanOptionalAction,
            default=True,
            help="append the leave-one-writer-out figures of the question's corpus (default: on; "
            "they come with the trained model, so they cost nothing extra)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["file"] is None and not options["lowo"]:
            raise CommandError("nothing to report: name a file, or leave --lowo on")
        try:
            if options["file"] is not None:
                report = evaluate_file(
                    options["file"], options["question"], latency_passes=max(1, options["passes"])
                )
                self.stdout.write(format_report(report, show_mistakes=options["mistakes"]))
            writers = writer_report(options["question"]) if options["lowo"] else None
        except JevError as exc:
            # Bad input is the user's to fix: a one-line message and exit status 1, no traceback.
            raise CommandError(exc.message) from None
        if options["lowo"]:
            if writers is None:
                self.stdout.write(f"\nleave-one-writer-out: {options['question']!r} has one writer only")
            else:
                self.stdout.write(format_writer_report(writers, show_mistakes=options["mistakes"]))
