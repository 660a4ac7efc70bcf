"""What every crows management command shares: one-line errors, tables and progress bars.

A bad argument ends the command with a non-zero exit and one line saying what is wrong
(never a usage dump or a traceback); from `call_command` it raises CommandError. Tables
and progress bars are drawn with rich; a progress bar only shows on a terminal, so piped
or captured output stays plain.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
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
    """BaseCommand with a one-line argument error, one-line OS errors and rich output
    helpers."""

    def write_transcript(self, lines: list[str], output: str | None) -> None:
        """A transcript's lines to standard output, or whole (or not at all) to `output`."""
        if not output:
            self.stdout.write("\n".join(lines))
            return
        with output_text(Path(output), writing="writing a transcript onto") as out:
            out.write("\n".join(lines) + "\n")
        self.stdout.write(f"{len(lines)} lines written to {output}")

    def execute(self, *args: Any, **options: Any) -> Any:
        # A file that cannot be read or written (a permission, a full disk, a missing
        # folder) is the user's to fix, told in one line; --traceback still shows it.
        try:
            return super().execute(*args, **options)
        except OSError as exc:
            if options.get("traceback"):
                raise
            raise CommandError(os_error_line(exc)) from None

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


def _live_database_files() -> list[Path]:
    """Every file of every SQLite database Django uses: the database, its WAL,
    shared-memory and journal files (those that exist, and those that may)."""
    from django.db import connections

    files: list[Path] = []
    for alias in connections:
        settings_dict = connections.settings[alias]
        if "sqlite" not in str(settings_dict.get("ENGINE", "")):
            continue
        name = str(settings_dict.get("NAME") or "")
        if not name or name == ":memory:" or name.startswith("file:"):
            continue
        database = Path(name).expanduser().resolve()
        files += [database, *(database.with_name(database.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]
    return files


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def refuse_database_files(target: Path, *, writing: str) -> None:
    """CommandError when `target` is a file of a SQLite database Django uses (or its WAL,
    shared-memory or journal file): overwriting it, even with a copy of itself, would
    leave the running server on deleted files and lose what it writes next. Files are
    compared, not only paths: a symbolic or hard link to one of them (the same device and
    inode) is the same file under another name."""
    try:
        resolved = target.expanduser().resolve()
    except (OSError, RuntimeError):
        resolved = target
    try:
        target_stat: os.stat_result | None = os.stat(target.expanduser())
    except (OSError, ValueError):
        target_stat = None  # a file yet to be made is no database's
    for live in _live_database_files():
        same = resolved == live
        if not same and target_stat is not None:
            try:
                same = _same_file(target_stat, os.stat(live))
            except OSError:
                same = False
        if same:
            raise CommandError(
                f"{target} is the live database's own file ({live.name}); {writing} it would "
                "lose what the server writes next: choose another path"
            )


def os_error_line(exc: OSError, *, doing: str = "") -> str:
    """One line for an OS error: what was being done, the file, and the system's words."""
    where = exc.filename if exc.filename is not None else ""
    words = exc.strerror or str(exc) or type(exc).__name__
    head = f"{doing} {where}".strip() if doing else str(where)
    return f"{head}: {words}" if head else words


def refuse_output_target(target: Path, *, writing: str) -> os.stat_result | None:
    """CommandError when `target` may not be written over: a database file (see
    refuse_database_files), or something that exists and is not a regular file (a device
    such as /dev/full, a pipe, a directory), which is refused rather than replaced. The
    existing file's status, or None when there is none yet."""
    target = target.expanduser()
    refuse_database_files(target, writing=writing)
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise CommandError(os_error_line(exc, doing="cannot write")) from None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise CommandError(f"{target} is not a regular file (a directory, a device or a pipe): name a file to write")
    return existing


@contextmanager
def replaced_atomically(target: Path, *, writing: str) -> Iterator[Path]:
    """A temporary file beside `target` to write into; renamed over `target` only when the
    block ends without error, so a failure (a full disk, an error half-way) leaves the old
    file whole and no partial file behind. `target` is checked by refuse_output_target
    first. A symbolic link keeps pointing at the new contents (the file it names is the
    one replaced). Any OS error is one line, as CommandError."""
    target = target.expanduser()
    existing = refuse_output_target(target, writing=writing)
    real = Path(os.path.realpath(target))
    try:
        fd, temp_name = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".partial")
    except OSError as exc:
        raise CommandError(f"cannot write {target}: {exc.strerror or exc}") from None
    temp = Path(temp_name)
    try:
        os.close(fd)
        # The new file gets the old one's permissions, or a new file's usual ones.
        if existing is not None:
            mode = stat.S_IMODE(existing.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temp, mode)
        yield temp
        os.replace(temp, real)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise CommandError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


@contextmanager
def output_text(target: Path, *, writing: str) -> Iterator[IO[str]]:
    """A text file written through replaced_atomically, flushed to disk before it takes
    `target`'s name."""
    with replaced_atomically(target, writing=writing) as temp, open(temp, "w", newline="", encoding="utf-8") as out:
        yield out
        out.flush()
        os.fsync(out.fileno())


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
