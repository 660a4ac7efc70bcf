"""What every crows management command shares: one-line errors, tables and progress bars.

A bad argument ends the command with a non-zero exit and one line saying what is wrong
(never a usage dump or a traceback); from `call_command` it raises CommandError. Tables
and progress bars are drawn with rich; a progress bar only shows on a terminal, so piped
or captured output stays plain.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

WIDE = 160


class CrowsCommand(BaseCommand):
    """BaseCommand with a one-line argument error and rich output helpers."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)

        def error(message: str) -> None:
            if not parser.called_from_command_line:
                raise CommandError(f"Error: {message}")
            sys.stderr.write(f"{subcommand}: {message} (see --help)\n")
            sys.exit(2)

        parser.error = error  # type: ignore[method-assign]
        return parser

    def console(self, *, err: bool = False) -> Console:
        stream = cast(IO[str], (self.stderr if err else self.stdout)._out)
        terminal = hasattr(stream, "isatty") and stream.isatty()
        return Console(file=stream, width=None if terminal else WIDE, force_terminal=None, soft_wrap=False)

    def table(self, title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        table = Table(show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*("" if cell is None else str(cell) for cell in row))
        if title:
            self.stdout.write(title)
        self.console().print(table)

    @contextmanager
    def progress(self, description: str, total: int | None = None) -> Iterator[Any]:
        """A progress bar on stderr while work runs; `advance(n)` / `update(completed=n)`."""
        console = self.console(err=True)
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        with bar:
            task = bar.add_task(description, total=total)

            class Handle:
                def advance(self, n: int = 1) -> None:
                    bar.advance(task, n)

                def update(self, **kw: Any) -> None:
                    bar.update(task, **kw)

            yield Handle()


def refuse_database_files(target: Path, *, writing: str) -> None:
    """CommandError when `target` is a file of a SQLite database Django uses (or its WAL,
    shared-memory or journal file): overwriting it, even with a copy of itself, would
    leave the running server on deleted files and lose what it writes next."""
    from django.db import connections

    try:
        resolved = target.expanduser().resolve()
    except OSError:
        return
    for alias in connections:
        settings_dict = connections.settings[alias]
        if "sqlite" not in str(settings_dict.get("ENGINE", "")):
            continue
        name = str(settings_dict.get("NAME") or "")
        if not name or name == ":memory:" or name.startswith("file:"):
            continue
        database = Path(name).expanduser().resolve()
        live = {database, *(database.with_name(database.name + suffix) for suffix in ("-wal", "-shm", "-journal"))}
        if resolved in live:
            raise CommandError(
                f"{target} is the live database's own file ({database.name}); {writing} it would "
                "lose what the server writes next: choose another path"
            )


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 0, with a plain message otherwise."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def int_up_to(maximum: int, *, minimum: int = 0) -> Any:
    """argparse type: a whole number from `minimum` (0) to `maximum`. A number past what a
    date or the database can hold is one line, not a traceback from deep inside."""
    import argparse

    def parse(text: str) -> int:
        value = positive_int(text)
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"expected {minimum} to {maximum:,}, got {text[:24]}")
        return value

    return parse
