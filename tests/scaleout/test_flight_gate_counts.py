"""The flight gate's counts on PostgreSQL (nests/models/lists.py FlightGate).

A take-off counts itself in on the gate's row and a landing counts itself out, each in
the one statement that locks the row; a take-off that finds the gate full waits and says
so on the row, and the landing that frees a slot hands it over and clears that once
nobody is left waiting. A start-up recovery counts again from the rows."""

from __future__ import annotations

import pytest

from tests.support.services import missing_postgres, run_on_fresh_postgres

pytestmark = [pytest.mark.scaleout, pytest.mark.live]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

SCRIPT = """
import json
from django.conf import settings
from flock.brains import BrainReply
from nests.actions import post_list
from nests.actions.lists import land_sortie, launch_sortie
from nests.actions.lists.flights import IN_AIR
from nests.actions.lists.recovery import recover_lists
from nests.models import FlightGate, Sortie

settings.CROWS_MAX_IN_FLIGHT = 2
reply = BrainReply(ok=True, text="done", tokens_in=10, tokens_out=0, provider="mock", model="mock", latency_ms=1)
todo = post_list("milk\\neggs\\nbread", requester="ada")
first, second, third = Sortie.objects.filter(todo_list=todo).order_by("id")
steps = {}

def gate():
    row = FlightGate.objects.get(pk=1)
    return [row.in_air, row.waiting]

def status(sortie):
    return Sortie.objects.get(pk=sortie.pk).status

for sortie in (first, second, third):
    if launch_sortie(sortie.pk) is not None:
        IN_AIR.release(sortie.pk)
steps["taken off"] = [status(first), status(second), status(third)]
steps["gate, full"] = gate()
land_sortie(first.pk, reply, jev={})
steps["third, once the first landed"] = status(third)
steps["gate, handed over"] = gate()
land_sortie(second.pk, reply, jev={})
steps["gate, none in the air"] = gate()
FlightGate.objects.filter(pk=1).update(in_air=5, waiting=True)  # as a dead process might leave it
recover_lists()
steps["gate, recounted"] = gate()
print(json.dumps(steps))
"""


def test_the_gate_counts_take_offs_and_landings_and_flags_a_waiting_sortie(tmp_path):
    steps = run_on_fresh_postgres(SCRIPT, tmp_path)

    assert steps["taken off"] == ["flying", "flying", "waiting"]
    assert steps["gate, full"] == [2, True]
    assert steps["third, once the first landed"] == "planned"
    assert steps["gate, handed over"] == [1, False]
    assert steps["gate, none in the air"] == [0, False]
    # Recovery queues the planned third again and counts from the rows: nothing flies.
    assert steps["gate, recounted"] == [0, False]
