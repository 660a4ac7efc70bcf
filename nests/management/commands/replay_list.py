"""`manage.py replay_list LIST_ID [--format text|md]`: a list's history as a transcript."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from flock.management.cli import CrowsCommand
from nests.transcripts import list_transcript


class Command(CrowsCommand):
    help = "Print a todo list's history (every event on its stream) as a readable transcript."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("list_id", metavar="LIST_ID")
        parser.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or md (Markdown)")

    def handle(self, *args: Any, **options: Any) -> None:
        lines = list_transcript(options["list_id"].strip(), markdown=options["format"] == "md")
        if lines is None:
            raise CommandError(f"no list {options['list_id']!r} (unknown, or pruned)")
        self.stdout.write("\n".join(lines))
