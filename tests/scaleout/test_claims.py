"""Claiming tasks on PostgreSQL (flock/worker.py): one statement claims the next ready
task in django-tasks-db's order and writes its lease; claimers racing on many threads
never take the same task twice, and a task not yet due stays queued."""

from __future__ import annotations

import pytest

from tests.support.services import missing_postgres, run_on_fresh_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

SCRIPT = """
import json, threading
from datetime import timedelta
from django.db import connection
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from flock import worker
from flock.models import TaskLease
from nests.tasks import finish_list_task

# In order: two of priority 0, one of 10 (first out), one of -5 (last), one not yet due.
low = [finish_list_task.enqueue(1).id, finish_list_task.enqueue(2).id]
high = finish_list_task.using(priority=10).enqueue(3).id
lowest = finish_list_task.using(priority=-5).enqueue(4).id
later = finish_list_task.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(5).id

one = worker._worker("solo-claimer", poller=False)
order = []
while (claimed := one._claim_in_one_statement("default")) is not None:
    order.append(str(claimed.id))
rows = {str(r.id): r for r in DBTaskResult.objects.all()}
leases = {str(l.task_id): l.worker_id for l in TaskLease.objects.all()}
first = {
    "order": order,
    "expected": [str(high), *map(str, low), str(lowest)],
    "statuses": {k: r.status for k, r in rows.items()},
    "worker_ids": {k: r.worker_ids for k, r in rows.items()},
    "started": {k: r.started_at is not None for k, r in rows.items()},
    "leases": leases,
    "later": str(later),
}

# A crowd: 200 tasks, 8 threads claiming as fast as they can.
crowd = [str(finish_list_task.enqueue(100 + n).id) for n in range(200)]
taken = {}
lock = threading.Lock()

def claim(n):
    me = worker._worker(f"racer-{n}", poller=False)
    try:
        while (claimed := me._claim_in_one_statement("default")) is not None:
            with lock:
                taken.setdefault(str(claimed.id), []).append(me.worker_id)
    finally:
        connection.close()

threads = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
leases = {str(l.task_id): l.worker_id for l in TaskLease.objects.filter(task_id__in=crowd)}
print(json.dumps({
    "first": first,
    "crowd": crowd,
    "taken": taken,
    "leases": leases,
    "racers": len({w for ws in taken.values() for w in ws}),
}))
"""


def test_one_statement_claims_in_order_with_a_lease_and_racers_never_share_a_task(tmp_path):
    report = run_on_fresh_postgres(SCRIPT, tmp_path)

    first = report["first"]
    assert first["order"] == first["expected"]
    for task_id in first["order"]:
        assert first["statuses"][task_id] == "RUNNING"
        assert first["worker_ids"][task_id] == ["solo-claimer"]
        assert first["started"][task_id]
        assert first["leases"][task_id] == "solo-claimer"
    assert first["statuses"][first["later"]] == "READY"
    assert first["later"] not in first["leases"]

    taken = report["taken"]
    assert sorted(taken) == sorted(report["crowd"])
    assert all(len(claimers) == 1 for claimers in taken.values())
    assert all(report["leases"][task_id] == claimers[0] for task_id, claimers in taken.items())
    assert report["racers"] > 1
