"""``manage.py jev_import_writers DIR [DIR ...]``: copy independent writers' lines into Jev's corpus."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from flock.jev.questions import PACKAGE_DATA_DIR
from flock.jev.writers import import_writers


class Command(BaseCommand):
    help = (
        "Copy writers' <question>.jsonl files (one folder per writer; the folder's name is the "
        "writer's) into flock/jev/data/writers/<writer>/, validated and deduplicated, and report "
        "what was dropped. See docs/JEV.md, Writers."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("folders", nargs="+", help="one folder per writer, holding kind.jsonl etc.")
        parser.add_argument(
            "--exclude",
            action="append",
            default=[],
            metavar="QUESTION=FILE",
            help="texts of FILE are never imported for QUESTION (e.g. kind=tests/flock/data/kind_unseen.jsonl)",
        )
        parser.add_argument(
            "--style",
            action="append",
            default=[],
            metavar="WRITER=TEXT",
            help="the writer's brief, for the manifest",
        )
        parser.add_argument(
            "--data-dir", type=Path, default=PACKAGE_DATA_DIR, help=f"default: {PACKAGE_DATA_DIR}"
        )
        parser.add_argument("--show-dropped", action="store_true", help="list every dropped line")

    def handle(self, *args: Any, **options: Any) -> None:
        sources: dict[str, Path] = {}
        for folder in options["folders"]:
            path = Path(folder)
            if not path.is_dir():
                raise CommandError(f"{folder}: not a folder")
            sources[path.resolve().name] = path
        exclude: dict[str, list[Path]] = {}
        for spec in options["exclude"]:
            question, _, file = spec.partition("=")
            if not file or not Path(file).is_file():
                raise CommandError(f"--exclude {spec!r}: expected QUESTION=FILE with an existing file")
            exclude.setdefault(question, []).append(Path(file))
        styles = {}
        for spec in options["style"]:
            writer, _, text = spec.partition("=")
            styles[writer] = text
        try:
            report = import_writers(sources, data_dir=options["data_dir"], exclude=exclude, styles=styles)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(report.summary())
        if options["show_dropped"]:
            for d in report.dropped:
                self.stdout.write(f"  {d.writer}/{d.question}.jsonl:{d.line}: {d.reason}: {d.text[:120]}")
