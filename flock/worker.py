"""Background work that survives a restart, and a dead worker.

Tasks go through Django's Tasks API into django-tasks-db's table, so a flight, an
approval timeout or a nudge is a row before anything runs. By default the server runs
an embedded worker (a pool of threads in the server process), so one daphne process is a
complete flock. For scale-out set CROWS_EMBEDDED_WORKER=0 and run `manage.py db_worker`
processes beside the servers (flock's db_worker runs the same pool).

How the pool works (docs/STREAM.md, "Background work"):
- one wake per task: enqueueing rings a doorbell that wakes one idle thread, and a thread
  that claimed a task wakes one more to look for the next, so a backlog spreads over the
  pool while an empty queue costs one poll per CROWS_WORKER_POLL_S per process (one
  thread polls; the others sleep until rung). On PostgreSQL an enqueue also sends
  `NOTIFY crows_tasks`, which rings the doorbell of every worker process;
- claims: on PostgreSQL one statement, `UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP
  LOCKED)` with the lease upsert beside it; on SQLite one `UPDATE … RETURNING` and then
  the lease upsert, each in autocommit;
- leases: a claim writes a TaskLease that the process's heartbeat renews every third of
  CROWS_TASK_LEASE_S, and drops once its task has ended (one statement per sweep); a
  task still RUNNING after its lease ran out (its worker died, say killed with SIGKILL)
  is queued again by any live worker's heartbeat, which looks every second, and runs
  again.
  Every task is idempotent (it locks its rows and finds its work done or takes it over),
  so a re-run never doubles an answer, a verdict or an event.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection, connections, transaction
from django.db.models import Exists, OuterRef, Q
from django.tasks.signals import task_enqueued
from django.utils import timezone
from django.utils.crypto import get_random_string
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from flock.db import queued_on_commit
from flock.jev import warm_in_background
from flock.models import TaskLease

log = logging.getLogger("crows.worker")

NOTIFY_CHANNEL = "crows_tasks"
# How often a process's heartbeat looks for tasks whose lease ran out (at most).
SWEEP_S = 1.0
# Sent as the NOTIFY payload: a process's listener ignores its own notifications, whose
# tasks its doorbell already rang for at commit (a second wake is a wasted claim).
_PROCESS_TOKEN = f"{os.getpid()}-{get_random_string(8)}"

_started = False
_start_lock = threading.Lock()
_threads: list[threading.Thread] = []
_stop = threading.Event()

# Domain recovery run once when the embedded worker starts (after a restart): an app
# registers a callable that re-enqueues or ends work left in flight.
_on_start: list[Callable[[], object]] = []


def on_start(recover: Callable[[], object]) -> Callable[[], object]:
    _on_start.append(recover)
    return recover


class Doorbell:
    """Wakes one waiting worker thread per ring (a plain Event would wake them all)."""

    def __init__(self, limit: int = 64) -> None:
        self._cond = threading.Condition()
        self._tokens = 0
        self._limit = limit

    def ring(self) -> None:
        with self._cond:
            if self._tokens < self._limit:
                self._tokens += 1
            self._cond.notify()

    def wait(self, timeout: float | None) -> bool:
        with self._cond:
            if not self._tokens:
                self._cond.wait(timeout)
            if self._tokens:
                self._tokens -= 1
                return True
            return False


_doorbell = Doorbell()


def _notify(**kwargs: object) -> None:
    # The row is visible to workers only after the enqueuing transaction commits.
    transaction.on_commit(_doorbell.ring)
    if connection.vendor == "postgresql" and not queued_on_commit(_notify_workers):
        # One NOTIFY per transaction, sent after its commit: a NOTIFY inside the
        # transaction takes PostgreSQL's notification-queue lock at commit, so every
        # enqueuing transaction committed one at a time while still holding its row
        # locks. Other processes' workers wake a moment later, when the row is visible.
        transaction.on_commit(_notify_workers)


def _notify_workers() -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [NOTIFY_CHANNEL, _PROCESS_TOKEN])
    except Exception:
        log.warning("NOTIFY for a new task failed; workers will find it by polling", exc_info=True)


def enqueue_many(task: Any, calls: list[tuple[Any, ...]]) -> list[Any]:
    """Enqueue `task` (a Task, its `using(...)` options set) once per argument tuple in
    `calls`, as `task.enqueue(*args)` each would, in one INSERT: the same rows
    django-tasks-db's backend writes, and the same `task_enqueued` signal per task (the
    doorbell, NOTIFY). Returns the TaskResults, in order."""
    from django.tasks.signals import task_enqueued
    from django_tasks_db.compat import normalize_json
    from django_tasks_db.models import get_date_max

    if not calls:
        return []
    backend = task.get_backend()
    backend.validate_task(task)
    rows: list[DBTaskResult[Any, Any]] = [
        DBTaskResult(
            id=backend._get_id(),
            args_kwargs=normalize_json({"args": list(args), "kwargs": {}}),
            priority=task.priority,
            task_path=task.module_path,
            queue_name=task.queue_name,
            # What django-tasks-db's pre_save handler sets, which bulk_create does not send.
            run_after=task.run_after or get_date_max(),
            backend_name=backend.alias,
        )
        for args in calls
    ]
    DBTaskResult.objects.bulk_create(rows)
    results = [row.task_result for row in rows]
    for result in results:
        task_enqueued.send(type(backend), task_result=result)
    return results


def connect_signals() -> None:
    task_enqueued.connect(_notify, dispatch_uid="crows-worker-wake")


# -- leases --------------------------------------------------------------------------

_running: dict[str, str] = {}  # task id -> worker id, for the tasks this process runs
_running_lock = threading.Lock()


def _lease_until() -> datetime:
    return timezone.now() + timedelta(seconds=settings.CROWS_TASK_LEASE_S)


def renew_leases() -> int:
    with _running_lock:
        mine = list(_running.items())
    renewed = 0
    until = _lease_until()
    for task_id, worker_id in mine:
        renewed += TaskLease.objects.filter(task_id=task_id, worker_id=worker_id).update(expires_at=until)
    return renewed


def drop_ended_leases() -> int:
    """Drop the leases of ended tasks (and of tasks no longer there), in one statement: a
    worker leaves its lease when its task ends, for this sweep to drop. A task that may
    still run (READY or RUNNING) keeps its lease: a claim that upserts it while this
    runs is never undone."""
    ended = TaskLease.objects.exclude(
        task_id__in=DBTaskResult.objects.exclude(
            status__in=[TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED]
        ).values("id")
    )
    return int(ended._raw_delete(ended.db))


def requeue_expired(*, embedded_restart: bool = False) -> int:
    """Queue again the RUNNING tasks whose worker's lease ran out, or that have no lease
    and started longer than a lease ago (claimed by a worker that kept none). With
    `embedded_restart`, also those held by embedded workers: only one server runs one, and
    it is starting, so its previous life's threads are gone."""
    now = timezone.now()
    live = TaskLease.objects.filter(task_id=OuterRef("id"), expires_at__gte=now)
    due: Any  # an Exists, its negation, or a Q combining them
    if embedded_restart:
        live = live.exclude(worker_id__startswith="embedded-")
        due = ~Exists(live)
    else:
        leased = Exists(TaskLease.objects.filter(task_id=OuterRef("id")))
        long_ago = now - timedelta(seconds=settings.CROWS_TASK_LEASE_S)
        due = ~Exists(live) & (leased | Q(started_at__lt=long_ago) | Q(started_at__isnull=True))
    candidates = DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING).filter(due)
    # Most sweeps find nothing: a read outside a transaction, which on SQLite (IMMEDIATE
    # transactions) takes no write lock.
    if not candidates.exists():
        return 0
    with transaction.atomic():
        if connection.vendor == "postgresql":
            candidates = candidates.select_for_update(skip_locked=True)
        expired = list(candidates.values_list("id", flat=True))
        if not expired:
            return 0
        DBTaskResult.objects.filter(id__in=expired, status=TaskResultStatus.RUNNING).update(
            status=TaskResultStatus.READY, started_at=None
        )
        TaskLease.objects.filter(task_id__in=expired).delete()
    log.warning("re-queued %d task(s) whose worker's lease ran out", len(expired))
    _doorbell.ring()
    return len(expired)


def _running_under_a_live_lease(task: Any) -> Any:
    """`task`'s runs RUNNING under a lease not yet run out: a live worker has them."""
    live = TaskLease.objects.filter(expires_at__gte=timezone.now())
    return DBTaskResult.objects.filter(
        status=TaskResultStatus.RUNNING, task_path=task.module_path, id__in=live.values("task_id")
    )


def held_elsewhere(task: Any) -> set[Any]:
    """The first arguments of `task`'s runs that a live `db_worker` holds right now (every
    embedded lease is this server's previous life's, see requeue_expired). At an embedded
    worker's start, the work in their hands is not a dead process's to recover: a server
    started beside db_workers (CROWS_EMBEDDED_WORKER left on) must not fly their sorties a
    second time, nor drop their banter."""
    embedded = TaskLease.objects.filter(worker_id__startswith="embedded-").values("task_id")
    runs = _running_under_a_live_lease(task).exclude(id__in=embedded).values_list("args_kwargs", flat=True)
    return {run["args"][0] for run in runs if run.get("args")}


def live_runs(task: Any, first_arg: object, *, besides: str | None = None) -> int:
    """How many runs of `task` with `first_arg` a live worker has, in any process, the run
    `besides` left out (the caller's own)."""
    runs = _running_under_a_live_lease(task).filter(args_kwargs__args__0=first_arg)
    if besides is not None:
        runs = runs.exclude(id=besides)
    return runs.count()


def _heartbeat() -> None:
    """Renew this process's leases every third of CROWS_TASK_LEASE_S, and look for tasks
    whose lease ran out every second (or every third of a shorter lease): a dead worker's
    tasks run again about one lease after its last renewal, not a lease and a third."""
    renew_every = max(0.2, settings.CROWS_TASK_LEASE_S / 3)
    sweep_every = min(SWEEP_S, renew_every)
    renewed_at = time.monotonic()
    while not _stop.wait(sweep_every):
        try:
            if time.monotonic() - renewed_at >= renew_every - sweep_every / 2:
                renew_leases()
                renewed_at = time.monotonic()  # after it worked: a failed renewal is tried next tick
                drop_ended_leases()
            requeue_expired()
        except Exception:
            log.exception("worker heartbeat failed; trying again")
        finally:
            close_old_connections()


def _listen_for_tasks() -> None:
    """PostgreSQL: ring this process's doorbell when any process enqueues a task."""
    import psycopg

    db = settings.DATABASES["default"]
    params = {
        "dbname": db.get("NAME"),
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
    }
    while not _stop.is_set():
        try:
            with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as conn:
                conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                while not _stop.is_set():
                    for note in conn.notifies(timeout=5.0):
                        if note.payload != _PROCESS_TOKEN:
                            _doorbell.ring()
        except Exception:
            log.warning("listening for new tasks failed; polling meanwhile", exc_info=True)
            _stop.wait(2.0)


# -- the worker ------------------------------------------------------------------------


class PoolWorker(Worker):
    """db_worker's claim and run, with a lease per claim; one of a pool of threads."""

    poller = True

    def run(self) -> None:  # noqa: D102 - same contract as Worker.run
        poll = settings.CROWS_WORKER_POLL_S
        while not _stop.is_set() and self.running:
            close_old_connections()
            try:
                ran = self.run_one()
            except Exception:
                log.exception("worker loop failed; continuing")
                ran = False
            close_old_connections()
            if ran:
                if self.max_tasks is not None and self._run_tasks >= self.max_tasks:
                    return
                continue
            # Only the poller wakes by itself; the rest sleep until a task rings for them.
            _doorbell.wait(poll if self.poller else max(30.0, poll))

    def run_one(self) -> bool:
        from django.db.utils import OperationalError
        from django_tasks_db.utils import is_locked_database_exception

        using = DBTaskResult.objects.db
        try:
            task_result = self._claim_in_one_statement(using)
        except OperationalError as exc:
            if is_locked_database_exception(exc):
                return False
            raise
        if task_result is None:
            return False
        # There may be more: let one more thread look.
        _doorbell.ring()
        with _running_lock:
            _running[str(task_result.id)] = self.worker_id
        try:
            self.run_task(task_result)
        finally:
            with _running_lock:
                _running.pop(str(task_result.id), None)
        # The lease stays until the heartbeat's sweep drops the leases of ended tasks in
        # one statement (drop_ended_leases): a lease matters only while its task is
        # RUNNING, and a DELETE per task was a sixth of the queue's statements.
        return True

    def _claim_in_one_statement(self, using: str) -> DBTaskResult | None:
        """Claim the next ready task with its lease, in django-tasks-db's order
        (`ready()`, priority, then run_after, then enqueued_at; SKIP LOCKED on PostgreSQL).

        PostgreSQL: the claim and the lease upsert are one statement in autocommit, one
        round trip instead of five (BEGIN, select, update, upsert, COMMIT): under load a
        round trip costs far more than the statement, and every task pays for a claim.

        SQLite: the claim is one `UPDATE … RETURNING` (a statement is atomic on its own,
        and SQLite runs one writer at a time, so two claimers never take one task), then
        the lease upsert, each in autocommit. A worker that dies between the two leaves a
        RUNNING task without a lease, which requeue_expired queues again once a lease has
        passed since it started, as for any claim that kept no lease."""
        from django_tasks_db.models import get_date_max

        db = connections[using]
        quote = db.ops.quote_name
        tasks, leases = quote(DBTaskResult._meta.db_table), quote(TaskLease._meta.db_table)
        now = timezone.now()
        pick = f"""
            SELECT id FROM {tasks}
            WHERE status = %s AND backend_name = %s AND (run_after = %s OR run_after <= %s)
            ORDER BY priority DESC, run_after ASC, enqueued_at ASC
            LIMIT 1"""
        if db.vendor != "postgresql":
            adapt = db.ops.adapt_datetimefield_value
            sql = f"""
                UPDATE {tasks} SET status = %s, started_at = %s, worker_ids = json_insert(worker_ids, '$[#]', %s)
                WHERE id = ({pick})
                RETURNING *"""
            params: list[Any] = [
                TaskResultStatus.RUNNING, adapt(now), self.worker_id,
                TaskResultStatus.READY, self.backend_name, adapt(get_date_max()), adapt(now),
            ]
            claimed = list(DBTaskResult.objects.using(using).raw(sql, params))
            if not claimed:
                return None
            # One upsert (a re-run's task may still have its dead worker's lease).
            TaskLease.objects.using(using).bulk_create(
                [TaskLease(task_id=claimed[0].id, worker_id=self.worker_id, expires_at=_lease_until())],
                update_conflicts=True, unique_fields=["task_id"], update_fields=["worker_id", "expires_at"],
            )
            return claimed[0]
        columns = ", ".join(f"claimed.{quote(f.column or f.name)}" for f in DBTaskResult._meta.concrete_fields)
        sql = f"""
            WITH claimed AS (
                UPDATE {tasks} SET status = %s, started_at = %s, worker_ids = worker_ids || to_jsonb(%s::text)
                WHERE id = ({pick} FOR UPDATE SKIP LOCKED)
                RETURNING *),
            lease AS (
                INSERT INTO {leases} (task_id, worker_id, expires_at) SELECT id, %s, %s FROM claimed
                ON CONFLICT (task_id) DO UPDATE SET worker_id = EXCLUDED.worker_id, expires_at = EXCLUDED.expires_at)
            SELECT {columns} FROM claimed"""
        params = [
            TaskResultStatus.RUNNING, now, self.worker_id,
            TaskResultStatus.READY, self.backend_name, get_date_max(), now,
            self.worker_id, _lease_until(),
        ]
        claimed = list(DBTaskResult.objects.using(using).raw(sql, params))
        return claimed[0] if claimed else None


# Kept for callers of the earlier name.
EmbeddedWorker = PoolWorker


def _worker(worker_id: str, *, poller: bool, max_tasks: int | None = None) -> PoolWorker:
    worker = PoolWorker(
        queue_names=["*"],
        interval=settings.CROWS_WORKER_POLL_S,
        batch=False,
        backend_name="default",
        startup_delay=False,
        max_tasks=max_tasks,
        worker_id=worker_id[:64],
        excluded_queue_names=[],
    )
    worker.poller = poller
    return worker


def _start_pool(prefix: str, threads: int) -> None:
    # SQLite: one poller per process (every poll is a write transaction on one file);
    # PostgreSQL's SKIP LOCKED claims are cheap, but one poller per process is enough there too.
    for n in range(threads):
        worker = _worker(f"{prefix}-{n}", poller=n == 0)
        thread = threading.Thread(target=worker.run, name=f"crows-worker-{n}", daemon=True)
        thread.start()
        _threads.append(thread)
    beat = threading.Thread(target=_heartbeat, name="crows-worker-heartbeat", daemon=True)
    beat.start()
    _threads.append(beat)
    if connection.vendor == "postgresql":
        listener = threading.Thread(target=_listen_for_tasks, name="crows-worker-listen", daemon=True)
        listener.start()
        _threads.append(listener)
    close_old_connections()


def requeue_interrupted() -> int:
    """At the embedded worker's start: queue again what this server's previous life left
    running, and whatever a dead worker's lease no longer covers."""
    return requeue_expired(embedded_restart=True)


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
    _start_pool(f"embedded-{get_random_string(12)}", settings.CROWS_WORKER_THREADS)


def run_pool(threads: int, *, worker_id: str = "") -> None:
    """`manage.py db_worker`: a pool in this process until SIGTERM/SIGINT, which lets the
    tasks in hand finish (a second signal, or SIGKILL, leaves them to their leases)."""
    prefix = worker_id or f"{socket.gethostname()[:16]}-{os.getpid()}-{get_random_string(6)}"

    def stop(signum: int, frame: object) -> None:
        if _stop.is_set():
            os._exit(1)
        log.warning("%s: finishing the tasks in hand, then exiting", signal.strsignal(signum))
        _stop.set()
        _doorbell.ring()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # As a server does at start: the first crow reply this worker posts is tagged by Jev
    # and may score crow fit, which would otherwise load the models and fit the vocabulary
    # (seconds) inside a flight.
    warm_in_background()
    requeue_expired()
    _start_pool(prefix, threads)
    log.warning("db_worker %s: %d thread(s) on %s", prefix, threads, connection.vendor)
    while not _stop.is_set():
        time.sleep(0.2)
    with _running_lock:
        busy = bool(_running)
    deadline = time.monotonic() + settings.CROWS_TASK_LEASE_S
    while busy and time.monotonic() < deadline:
        time.sleep(0.1)
        with _running_lock:
            busy = bool(_running)


def run_pending(max_tasks: int = 1000) -> int:
    """Run every task that is due now, in this thread; for tests and management commands."""
    worker = _worker(f"inline-{get_random_string(12)}", poller=True)
    ran = 0
    while ran < max_tasks and worker.run_one():
        ran += 1
    return ran
