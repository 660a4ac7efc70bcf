"""Two verdicts on one holder's trust at once, on PostgreSQL.

A trust entry is computed from the holder's newest one and numbered after it (`seq`,
unique per holder and task type), in one statement with no lock taken before it
(trust/actions/ledger.py). While one verdict's entry is not committed, a second one for
the same holder waits on that number, inserts nothing once the first commits, and then
appends from the first's balance: the streak counts both approvals, none is lost."""

from __future__ import annotations

import pytest

from tests.support.services import LOCK_PROBES, missing_postgres, run_on_fresh_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

SCRIPT = LOCK_PROBES + """
import json, os, threading
from django.db import connection, transaction
from trust.actions import record_trust_outcome
from trust.models import TrustEntry, TrustHolder

url = os.environ["DATABASE_URL"]
steps = {}
first_in = threading.Event()
release = threading.Event()

def first():
    with transaction.atomic():
        record_trust_outcome("Hugin", task_type="code", approved=True)
        first_in.set()
        release.wait(30)
    connection.close()

def second():
    first_in.wait(30)
    record_trust_outcome("Hugin", task_type="code", approved=True)
    connection.close()

threads = [threading.Thread(target=first), threading.Thread(target=second)]
for t in threads:
    t.start()
first_in.wait(30)
probe = psycopg.connect(url, autocommit=True)
steps["second waits"] = lock_waiters(probe)
release.set()
for t in threads:
    t.join(30)
steps["entries"] = list(TrustEntry.objects.filter(holder="Hugin", task_type="code").order_by("id")
                        .values_list("seq", "level_before", "level", "streak"))
steps["holders"] = TrustHolder.objects.filter(holder="Hugin", task_type="code").count()
print(json.dumps(steps))
"""


def test_a_second_verdict_on_a_holder_appends_after_the_first_commits(tmp_path):
    steps = run_on_fresh_postgres(SCRIPT, tmp_path)

    assert steps["second waits"] == 1
    assert steps["entries"] == [[1, 0, 0, 1], [2, 0, 0, 2]]
    assert steps["holders"] == 1
