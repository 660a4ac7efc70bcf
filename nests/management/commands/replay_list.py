"""`manage.py replay_list LIST_ID [--format text|md] [-o FILE]`: a list's history as a transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from flock.management.cli import CrowsCommand, refuse_output_target
from nests.transcripts import list_transcript


class Command(CrowsCommand):
    help = "Print a todo list's history (every event on its stream) as a readable transcript."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("list_id", metavar="LIST_ID")
        parser.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or md (Markdown)")
        parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE (whole, or not at all) instead of standard output")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["output"]:
            refuse_output_target(Path(options["output"]), writing="writing a transcript onto")
        lines = list_transcript(options["list_id"].strip(), markdown=options["format"] == "md")
        if lines is None:
            raise CommandError(f"no list {options['list_id']!r} (unknown, or pruned)")
        self.write_transcript(lines, options["output"])
