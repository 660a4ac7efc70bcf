"""Background work that survives a restart.

Tasks go through Django's Tasks API into django-tasks-db's table, so a flight, an
approval timeout or a nudge is a row before anything runs. By default the server runs
an embedded worker (a few threads polling that table, woken at once when this process
enqueues), so one daphne process is a complete flock. For scale-out set
CROWS_EMBEDDED_WORKER=0 and run `manage.py db_worker` processes beside the servers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections, transaction
from django.tasks.signals import task_enqueued
from django.utils.crypto import get_random_string
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

log = logging.getLogger("crows.worker")

_wake = threading.Event()
_started = False
_start_lock = threading.Lock()
_threads: list[threading.Thread] = []
_stop = threading.Event()

# Domain recovery run once when the embedded worker starts (after a restart): an app
# registers a callable that re-enqueues or ends work left in flight.
_on_start: list[Callable[[], None]] = []


def on_start(recover: Callable[[], None]) -> Callable[[], None]:
    _on_start.append(recover)
    return recover


def _notify(**kwargs: object) -> None:
    # The row is visible to the worker threads only after the enqueuing transaction commits.
    transaction.on_commit(_wake.set)


def connect_signals() -> None:
    task_enqueued.connect(_notify, dispatch_uid="crows-worker-wake")


class EmbeddedWorker(Worker):
    """db_worker's loop, but sleeping on an event this process sets when it enqueues."""

    def run(self) -> None:  # noqa: D102 - same contract as Worker.run
        while not _stop.is_set():
            close_old_connections()
            try:
                ran = self.run_one()
            except Exception:
                log.exception("embedded worker loop failed; continuing")
                ran = False
            close_old_connections()
            if not ran:
                _wake.wait(settings.CROWS_WORKER_POLL_S)
                _wake.clear()

    def run_one(self) -> bool:
        from django.db.utils import OperationalError
        from django_tasks_db.utils import exclusive_transaction, is_locked_database_exception

        tasks = DBTaskResult.objects.ready().filter(backend_name=self.backend_name)
        try:
            with exclusive_transaction(tasks.db):
                task_result = tasks.get_locked()
                if task_result is not None:
                    task_result.claim(self.worker_id)
        except OperationalError as exc:
            if is_locked_database_exception(exc):
                return False
            raise
        if task_result is None:
            return False
        self.run_task(task_result)
        return True


def requeue_interrupted() -> int:
    """Put tasks a dead process was running back in the queue (single-server mode only:
    with several workers, another live one may be running them)."""
    with transaction.atomic():
        return DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING).update(
            status=TaskResultStatus.READY, started_at=None
        )


def start_embedded() -> None:
    global _started
    with _start_lock:
        if _started:
            return
        _started = True
    requeued = requeue_interrupted()
    if requeued:
        log.warning("re-queued %d task(s) interrupted by the last shutdown", requeued)
    for recover in _on_start:
        try:
            recover()
        except Exception:
            log.exception("start-up recovery %s failed", getattr(recover, "__name__", recover))
    close_old_connections()
    for n in range(settings.CROWS_WORKER_THREADS):
        worker = EmbeddedWorker(
            queue_names=["*"],
            interval=settings.CROWS_WORKER_POLL_S,
            batch=False,
            backend_name="default",
            startup_delay=False,
            max_tasks=None,
            worker_id=f"embedded-{get_random_string(12)}-{n}",
            excluded_queue_names=[],
        )
        thread = threading.Thread(target=worker.run, name=f"crows-worker-{n}", daemon=True)
        thread.start()
        _threads.append(thread)


def run_pending(max_tasks: int = 1000) -> int:
    """Run every task that is due now, in this thread; for tests and management commands."""
    worker = EmbeddedWorker(
        queue_names=["*"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id=f"inline-{get_random_string(12)}",
        excluded_queue_names=[],
    )
    ran = 0
    while ran < max_tasks and worker.run_one():
        ran += 1
    return ran
