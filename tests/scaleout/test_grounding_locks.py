"""Grounding a crow takes its debate's room before the crow, on PostgreSQL.

The Sentry quarantines a crow from inside a post in a room: it holds the room's row, then
locks the crow's. The admin quarantining (or retiring) the same crow used to lock the
crow's row first and the room's after it, to stop the crow's debate there: the two
transactions could wait for each other, and PostgreSQL would abort one. Now the grounding
locks the rooms of the crow's running debates first (flock.actions.before_crow_grounded):
while a second connection holds the room, the quarantine waits for it without holding
the crow. The Sentry's flag takes them in the same order, even when it flags the crow in
another room than its debate's."""

from __future__ import annotations

import pytest

from tests.support.services import LOCK_PROBES, missing_postgres, run_on_fresh_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

# Both scripts start from Hugin and Munin debating in Arena (`debate`), with the lock probes.
A_RUNNING_DEBATE = LOCK_PROBES + """
import json, os, threading
import psycopg
from flock import worker
from flock.models import Crow
from nests.actions import create_nest, post_message
from nests.models import Debate

create_nest("Arena", crows=["Hugin", "Munin", "Pepper"])
post_message("arena", author="owner", text="@Hugin and @Munin, debate this: Go or Python for billing? Two rounds.")
for _ in range(50):
    if Debate.objects.filter(status="running").exists():
        break
    worker.run_pending(max_tasks=1)
debate = Debate.objects.get(status="running")
"""

SCRIPT = A_RUNNING_DEBATE + """
from django.db import connection
from trust.actions import quarantine_crow

hugin = Crow.objects.get(name="Hugin").pk
url = os.environ["DATABASE_URL"]
steps = {"crows": debate.crows}

holder = psycopg.connect(url)  # as the Sentry's post in the room would, until rolled back
holder.execute("SELECT 1 FROM nests_nest WHERE id = %s FOR UPDATE", [debate.nest_id])
finished = threading.Event()

def ground():
    quarantine_crow("Hugin", breach="owner_report", evidence="by hand", by="admin:ada")
    connection.close()
    finished.set()

grounding = threading.Thread(target=ground)
grounding.start()
probe = psycopg.connect(url, autocommit=True)
steps["waiting for the room"] = lock_waiters(probe)
steps["crow"] = row_lock(probe, "flock_crow", hugin)
holder.rollback()
grounding.join(30)
steps["finished"] = finished.is_set()
steps["debate"] = Debate.objects.get(pk=debate.pk).status
steps["hugin"] = Crow.objects.get(pk=hugin).status
print(json.dumps(steps))
"""


def test_quarantining_a_debater_locks_the_debates_room_before_the_crow(tmp_path):
    steps = run_on_fresh_postgres(SCRIPT, tmp_path)

    assert steps["crows"] == ["Hugin", "Munin"]
    assert steps["waiting for the room"] == 1
    assert steps["crow"] == "free"  # waiting for the room, it does not hold the crow yet
    assert steps["finished"]
    assert (steps["debate"], steps["hugin"]) == ("stopped", "quarantined")


SENTRY_ELSEWHERE = A_RUNNING_DEBATE + """
from django.db import connection, transaction
from nests.actions.chat.flags import flag_breach
from nests.actions.chat.sentry import Finding
from nests.models import Nest

forge = create_nest("Forge", crows=["Hugin", "Pepper"])
hugin = Crow.objects.get(name="Hugin")
url = os.environ["DATABASE_URL"]
steps = {}

holder = psycopg.connect(url)  # the admin grounding Hugin holds the debate's room first
holder.execute("SELECT 1 FROM nests_nest WHERE id = %s FOR UPDATE", [debate.nest_id])
finished = threading.Event()

def sentry():
    with transaction.atomic():
        Nest.objects.select_for_update().get(pk=forge.pk)  # as a post in Forge holds it
        flag_breach(hugin, nest=forge, finding=Finding(kind="forbidden_kind", score=1.0, evidence="a test"))
    connection.close()
    finished.set()

flagging = threading.Thread(target=sentry)
flagging.start()
probe = psycopg.connect(url, autocommit=True)
steps["waiting for the debate's room"] = lock_waiters(probe)
steps["crow"] = row_lock(probe, "flock_crow", hugin.pk)
holder.rollback()
flagging.join(30)
steps["finished"] = finished.is_set()
steps["debate"] = Debate.objects.get(pk=debate.pk).status
steps["hugin"] = Crow.objects.get(pk=hugin.pk).status
print(json.dumps(steps))
"""


def test_the_sentry_flagging_a_debater_in_another_room_locks_the_debates_room_before_the_crow(tmp_path):
    steps = run_on_fresh_postgres(SENTRY_ELSEWHERE, tmp_path)

    assert steps["waiting for the debate's room"] == 1
    assert steps["crow"] == "free"
    assert steps["finished"]
    assert (steps["debate"], steps["hugin"]) == ("stopped", "quarantined")
