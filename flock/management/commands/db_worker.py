"""`manage.py db_worker`: django-tasks-db's worker command, running flock's pool instead
of one thread: CROWS_WORKER_THREADS threads (or --threads), leases renewed by a
heartbeat, one wake per task (flock/worker.py, docs/STREAM.md). --batch and --max-tasks
keep their meaning (one thread)."""

from __future__ import annotations

from argparse import ArgumentParser, ArgumentTypeError
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django_tasks_db.management.commands.db_worker import Command as StockCommand

from flock import worker
from flock.db import NOT_MIGRATED, first_line, fit_pool_to_threads, unapplied_migrations
from flock.management.cli import CrowsCommand
from flock.stream.quiet_outage import say_if_redis_is_away


def _threads(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ArgumentTypeError(f"--threads must be a whole number, got {value!r}") from None
    if not 1 <= number <= 64:
        raise ArgumentTypeError("--threads must be between 1 and 64")
    return number


def _database_answers() -> None:
    """A worker that cannot reach its database, or finds it not migrated, stops in one
    line (naming DATABASE_URL, or the command to run), not with the pool's traceback
    (after the pool's own wait, so a database still starting up is waited for)."""
    from django.db import DatabaseError, connection

    try:
        connection.ensure_connection()
    except DatabaseError as exc:
        raise CommandError(f"the database in DATABASE_URL is not answering: {first_line(exc)}") from None
    try:
        missing = unapplied_migrations()
    finally:
        connection.close()  # the main thread's: it runs no task
    if missing:
        raise CommandError(NOT_MIGRATED.format(count=missing))


# What --help says of the stock options the pool refuses or ignores.
UNUSED_HELP = {
    "queue_name": "Only 'default' (or '*'): the flock has one queue, and every worker runs it",
    "exclude_queues": "Refused: the flock has one queue",
    "interval": "Refused: set CROWS_WORKER_POLL_S instead",
    "backend_name": "Only 'default': the flock's tasks are all on it",
    "reload": "--reload is refused (restart the worker instead); --no-reload is the pool's way anyway",
    "startup_delay": "Ignored: the pool starts at once",
}


# The default of a stock option the pool has no use for: a value given (even none, as
# `--interval` alone gives) is told apart from one not given.
_UNSET: Any = object()


def _given(value: object) -> str:
    return "with no value" if value is None else repr(value)


def _refuse_unused(
    *, queue_name: object = _UNSET, exclude_queues: object = _UNSET, interval: object = _UNSET,
    backend_name: object = _UNSET, reload: object = None, **_: Any,
) -> None:
    """The flock enqueues every task on the default backend's one queue, and the pool runs
    all of it: a worker asked for another queue, or to reload, would otherwise run on
    doing something else than asked."""
    if queue_name is not _UNSET and queue_name not in ("*", "default"):
        raise CommandError(f"--queue-name {_given(queue_name)}: the flock has one queue, 'default', and every worker runs it")
    if exclude_queues is not _UNSET:
        raise CommandError("--exclude-queues: the flock has one queue, 'default', and every worker runs it")
    if interval is not _UNSET:
        raise CommandError("--interval: set CROWS_WORKER_POLL_S instead (how often one thread looks for due work)")
    if backend_name is not _UNSET and backend_name != "default":
        raise CommandError(f"--backend {_given(backend_name)}: the flock's tasks are all on the 'default' backend")
    if reload:
        raise CommandError("--reload: flock's pool does not reload on code changes; restart it (the Procfile passes --no-reload)")


class Command(CrowsCommand, StockCommand):  # CrowsCommand first: its one-line argument errors
    help = "Run a pool of background worker threads with leases (flock's db_worker)"

    def execute(self, *args: Any, **options: Any) -> str | None:
        # Before the checks, which wait for the database: a wrong option is said at once.
        _refuse_unused(**options)
        return super().execute(*args, **options)

    def check(self, *args: Any, **kwargs: Any) -> None:
        # Before the system checks, which are the first to need the database.
        _database_answers()
        say_if_redis_is_away("db_worker")
        super().check(*args, **kwargs)

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--threads",
            type=_threads,
            default=None,
            help="Worker threads in this process (default: CROWS_WORKER_THREADS)",
        )
        # The stock options the pool has no use for: unset unless given, so that one
        # given is refused by name instead of being ignored in silence.
        parser.set_defaults(queue_name=_UNSET, exclude_queues=_UNSET, interval=_UNSET, backend_name=_UNSET, reload=None)
        for action in parser._actions:
            if action.dest in UNUSED_HELP:
                action.help = UNUSED_HELP[action.dest]

    # Keyword-only like the stock command's, but with --threads and without the options this
    # pool does not use (they arrive in **options).
    def handle(  # type: ignore[override]
        self, *, verbosity: int, batch: bool, max_tasks: int | None, threads: int | None,
        worker_id: str, reload: bool, **options: Any,
    ) -> None:
        self.configure_logging(verbosity)
        if batch or max_tasks:
            pool = worker._worker(f"batch-{worker_id}", poller=True, max_tasks=max_tasks)
            ran = 0
            while (max_tasks is None or ran < max_tasks) and pool.run_one():
                ran += 1
            return
        if threads:
            fit_pool_to_threads(threads)
        worker.run_pool(threads or settings.CROWS_WORKER_THREADS, worker_id=worker_id)
