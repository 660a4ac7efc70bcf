"""Background work survives a restart and a dead worker: a task scheduled for later still
fires, one left running runs again, leases expire, and one ring wakes one thread (the
end-to-end SIGKILL test is tests/scaleout/test_workers.py)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from flock import worker
from flock.models import TaskLease
from tests.support.tasks import leave_mark


@pytest.mark.live
def test_a_task_scheduled_for_later_fires_after_the_server_restarted(live_server_factory, tmp_path):
    server = live_server_factory().start()
    mark = tmp_path / "mark"
    result = server.manage(
        "shell", "-c",
        "from datetime import timedelta; from django.utils import timezone; "
        "from tests.support.tasks import leave_mark; "
        # Due well after the server is stopped, however slowly this shell starts on a
        # loaded machine: the time is read once Django is up.
        f"leave_mark.using(run_after=timezone.now() + timedelta(seconds=10)).enqueue({str(mark)!r})",
    )
    assert result.returncode == 0, result.stderr
    server.stop(hard=True)
    assert not mark.exists()
    server.start()
    deadline = time.monotonic() + 30
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), server.log()[-2000:]


@pytest.mark.live
def test_a_task_running_when_the_server_died_runs_again_after_restart(live_server_factory, tmp_path):
    server = live_server_factory().start()
    server.stop(hard=True)
    mark = tmp_path / "mark"
    # A task the dead process had claimed: RUNNING, never finished.
    result = server.manage(
        "shell", "-c",
        "from tests.support.tasks import leave_mark; "
        "from django_tasks_db.models import DBTaskResult; "
        f"r = leave_mark.enqueue({str(mark)!r}); "
        "DBTaskResult.objects.filter(id=r.id).update(status='RUNNING')",
    )
    assert result.returncode == 0, result.stderr
    server.start()
    deadline = time.monotonic() + 20
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), server.log()[-2000:]


def _running(task_id, *, lease_left_s: float | None, worker_id: str = "gone-0", started_s_ago: float = 1):
    DBTaskResult.objects.filter(id=task_id).update(
        status=TaskResultStatus.RUNNING, started_at=timezone.now() - timedelta(seconds=started_s_ago)
    )
    if lease_left_s is not None:
        TaskLease.objects.create(
            task_id=task_id, worker_id=worker_id, expires_at=timezone.now() + timedelta(seconds=lease_left_s)
        )


def test_a_task_whose_lease_ran_out_runs_again(transactional_db, tmp_path):
    mark = tmp_path / "mark"
    result = leave_mark.enqueue(str(mark))
    _running(result.id, lease_left_s=-1)
    assert worker.requeue_expired() == 1
    assert not TaskLease.objects.exists()
    assert worker.run_pending() == 1
    assert mark.read_text() == "ran"
    assert DBTaskResult.objects.get(id=result.id).status == TaskResultStatus.SUCCESSFUL


def test_a_live_lease_keeps_its_task(transactional_db, tmp_path):
    result = leave_mark.enqueue(str(tmp_path / "mark"))
    _running(result.id, lease_left_s=20)
    assert worker.requeue_expired() == 0
    assert DBTaskResult.objects.get(id=result.id).status == TaskResultStatus.RUNNING


def test_a_running_task_without_a_lease_is_requeued_once_a_lease_has_passed(transactional_db, tmp_path, settings):
    settings.CROWS_TASK_LEASE_S = 5
    fresh = leave_mark.enqueue(str(tmp_path / "a"))
    old = leave_mark.enqueue(str(tmp_path / "b"))
    _running(fresh.id, lease_left_s=None, started_s_ago=1)
    _running(old.id, lease_left_s=None, started_s_ago=60)
    assert worker.requeue_expired() == 1
    assert DBTaskResult.objects.get(id=old.id).status == TaskResultStatus.READY
    assert DBTaskResult.objects.get(id=fresh.id).status == TaskResultStatus.RUNNING


def test_a_claim_holds_a_lease_that_the_heartbeat_renews_and_drops_once_the_task_ended(transactional_db, tmp_path):
    seen: list[tuple[str, float]] = []
    result = leave_mark.enqueue(str(tmp_path / "mark"))

    def spy(task_result):
        lease = TaskLease.objects.get(task_id=task_result.id)
        before = lease.expires_at
        assert worker.renew_leases() == 1
        lease.refresh_from_db()
        seen.append((lease.worker_id, (lease.expires_at - before).total_seconds()))
        worker.PoolWorker.run_task(pool, task_result)

    pool = worker._worker("spy-0", poller=True)
    pool.run_task = spy
    assert pool.run_one()
    assert seen and seen[0][0] == "spy-0" and seen[0][1] >= 0
    # The ended task's lease goes with the heartbeat's next sweep, with every other one.
    assert worker.drop_ended_leases() == 1
    assert not TaskLease.objects.filter(task_id=result.id).exists()


def test_one_ring_wakes_one_waiting_thread():
    bell = worker.Doorbell()
    woken: list[int] = []
    ready = threading.Barrier(4)

    def wait(n: int) -> None:
        ready.wait()
        if bell.wait(1.0):
            woken.append(n)

    threads = [threading.Thread(target=wait, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    ready.wait()
    bell.ring()
    for t in threads:
        t.join()
    assert len(woken) == 1


def test_a_sqlite_claim_is_one_update_in_the_queues_order_with_its_lease(transactional_db, tmp_path):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    later = leave_mark.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(str(tmp_path / "later"))
    low = [leave_mark.enqueue(str(tmp_path / f"low-{n}")) for n in range(2)]
    high = leave_mark.using(priority=10).enqueue(str(tmp_path / "high"))
    claimer = worker._worker("claimer-0", poller=False)
    order = []
    with CaptureQueriesContext(connection) as seen:
        while (claimed := claimer._claim_in_one_statement("default")) is not None:
            order.append(str(claimed.id))
    assert order == [str(high.id), *(str(r.id) for r in low)]  # priority, then enqueued
    # Each claim: the UPDATE … RETURNING and the lease upsert, in autocommit; then one
    # UPDATE that finds nothing.
    assert len(seen.captured_queries) == 2 * 3 + 1
    assert not [q for q in seen.captured_queries if q["sql"].startswith(("BEGIN", "SAVEPOINT"))]
    running = DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING)
    assert {str(r.id) for r in running} == set(order)
    assert all(r.worker_ids == ["claimer-0"] and r.started_at is not None for r in running)
    assert {str(lease.task_id): lease.worker_id for lease in TaskLease.objects.all()} == dict.fromkeys(order, "claimer-0")
    assert DBTaskResult.objects.get(id=later.id).status == TaskResultStatus.READY
