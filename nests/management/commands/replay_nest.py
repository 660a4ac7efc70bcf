"""`manage.py replay_nest NEST_ID [--format text|md] [-o FILE]`: a nest's conversation as a transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from flock.management.cli import CrowsCommand, int_up_to, refuse_output_target
from nests.transcripts import nest_transcript


class Command(CrowsCommand):
    help = "Print a nest's messages, in order, as a readable transcript."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("nest_id", metavar="NEST_ID")
        parser.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or md (Markdown)")
        parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE (whole, or not at all) instead of standard output")
        parser.add_argument("--last", type=int_up_to(1_000_000), default=0, metavar="N",
                            help="only the last N messages (default: all; at most 1,000,000)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["output"]:
            refuse_output_target(Path(options["output"]), writing="writing a transcript onto")
        lines = nest_transcript(options["nest_id"].strip(), markdown=options["format"] == "md", last=options["last"])
        if lines is None:
            raise CommandError(f"no nest {options['nest_id']!r}; `GET /api/nests` lists them")
        self.write_transcript(lines, options["output"])
