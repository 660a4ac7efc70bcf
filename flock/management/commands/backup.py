"""`manage.py backup PATH`: a consistent copy of the SQLite database while the server runs.

It uses SQLite's online backup API, which copies the database page by page and starts
over on its own if a writer changes a page already copied, so the copy is one moment's
database even with lists flying. On PostgreSQL it prints the `pg_dump` line to run."""

from __future__ import annotations

import os
import shlex
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.db import connections

from flock.management.cli import CrowsCommand, refuse_database_files, replaced_atomically

PAGES_PER_STEP = 256


class Command(CrowsCommand):
    help = (
        "Copy the SQLite database to PATH (a file, or a directory to hold a timestamped file) "
        "with SQLite's online backup, safe while the server runs; on PostgreSQL print the "
        "pg_dump command to use instead."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path", metavar="PATH", help="the backup file, or a directory (an existing one, or one to make: end it with /)")
        parser.add_argument("--force", action="store_true", help="overwrite PATH if it exists")
        parser.add_argument("--database", default="default", help="the Django database alias (default: default)")

    def handle(self, *args: Any, **options: Any) -> None:
        alias = options["database"]
        if alias not in connections.settings:
            raise CommandError(f"no database alias {alias!r}")
        connection = connections[alias]
        if connection.vendor == "postgresql":
            self.stdout.write(self._pg_dump_line(connection.settings_dict, options["path"]))
            return
        if connection.vendor != "sqlite":
            raise CommandError(f"backup knows SQLite and PostgreSQL, not {connection.vendor}")
        if not str(options["path"]).strip():
            raise CommandError("name the backup's file or directory; an empty path is neither")
        target = Path(options["path"]).expanduser()
        if str(options["path"]).endswith(("/", os.sep)) and not target.exists():
            # `backup /backups/`: a directory is meant; make it (not its parents: a typo
            # in them should not grow a tree).
            if not target.parent.is_dir():
                missing = not target.parent.exists()
                raise CommandError(f"{target.parent} {'does not exist' if missing else 'is not a directory'}")
            target.mkdir()
        if target.is_dir():
            target = target / f"crows-{datetime.now(UTC):%Y%m%d-%H%M%S}.sqlite3"
        refuse_database_files(target, writing="backing up onto")
        if target.exists() and not options["force"]:
            raise CommandError(f"{target} exists; choose another path or pass --force")
        if not target.parent.is_dir():
            missing = not target.parent.exists()
            raise CommandError(f"{target.parent} {'does not exist' if missing else 'is not a directory'}")
        connection.ensure_connection()
        source: sqlite3.Connection = connection.connection
        # Only a complete, checked copy takes the final name: the copy is made beside it.
        with replaced_atomically(target, writing="backing up onto") as partial:
            try:
                destination = sqlite3.connect(partial)
            except sqlite3.Error as exc:
                raise CommandError(f"cannot write {partial}: {exc}") from None
            try:
                with self.progress("backing up") as bar:

                    def progress(status: int, remaining: int, total: int) -> None:
                        bar.update(completed=total - remaining, total=total)

                    source.backup(destination, pages=PAGES_PER_STEP, progress=progress)
                events = self._check(destination)
            except sqlite3.Error as exc:
                raise CommandError(f"backup failed: {exc}") from None
            finally:
                destination.close()
        size = target.stat().st_size
        self.stdout.write(f"backed up {events} events ({size / 1024 / 1024:.1f} MiB) to {target}")

    @staticmethod
    def _check(copy: sqlite3.Connection) -> int:
        verdict = copy.execute("PRAGMA quick_check").fetchone()[0]
        if verdict != "ok":
            raise sqlite3.DatabaseError(f"the copy failed its check: {verdict}")
        return copy.execute("SELECT count(*) FROM flock_event").fetchone()[0]

    @staticmethod
    def _pg_dump_line(settings_dict: dict[str, Any], path: str) -> str:
        parts = ["pg_dump", "--format=custom", f"--file={path}"]
        for flag, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
            if settings_dict.get(key):
                parts.append(f"{flag}={settings_dict[key]}")
        parts.append(str(settings_dict.get("NAME") or ""))
        line = " ".join(shlex.quote(p) for p in parts)
        return (
            "PostgreSQL: pg_dump takes a consistent snapshot while the server runs. Run:\n"
            f"  {line}\n"
            "(the password from PGPASSWORD or ~/.pgpass; restore with pg_restore --clean --dbname=...)"
        )
