"""The trust ladder: promotion after a streak of owner approvals, demotion on a rejection,
timeouts never move it; `trust.changed` on every change; GET /api/trust."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client

from flock.errors import BadInput
from trust.actions import record_trust_outcome, seed_trust
from trust.models import TrustEntry
from trust.queries import trust_balance, trust_ledger

pytestmark = pytest.mark.django_db


def _judge(*outcomes: bool, holder: str = "Hugin", task_type: str = "research", list_id: str = "") -> None:
    for approved in outcomes:
        record_trust_outcome(holder, task_type=task_type, approved=approved, list_id=list_id)


def test_a_streak_of_approvals_promotes_one_level_at_a_time(capture_events):
    with capture_events() as events:
        _judge(True, True, list_id="L1")
        assert trust_balance("Hugin", "research") == (0, 2)
        _judge(True, list_id="L1")
        assert trust_balance("Hugin", "research") == (1, 0)
        _judge(True, True, True, list_id="L2")
        assert trust_balance("Hugin", "research") == (2, 0)
        _judge(True, True, True, True)
    assert trust_balance("Hugin", "research") == (2, 4)  # trusted is the top
    changes = events.named("trust.changed")
    assert [(c["from"], c["to"], c["list_id"]) for c in changes] == [(0, 1, "L1"), (1, 2, "L2")]
    assert set(changes[0]) == {"list_id", "ts", "holder", "task_type", "from", "to"}
    assert changes[0]["holder"] == "Hugin" and changes[0]["task_type"] == "research"


def test_one_rejection_demotes_one_level_and_resets_the_streak(capture_events):
    _judge(True, True, True, True, True)  # level 1, streak 2
    with capture_events() as events:
        _judge(False, list_id="L9")
    assert trust_balance("Hugin", "research") == (0, 0)
    assert [(c["from"], c["to"], c["list_id"]) for c in events.named("trust.changed")] == [(1, 0, "L9")]
    _judge(True, True)
    assert trust_balance("Hugin", "research") == (0, 2)  # the streak restarted


def test_a_rejection_at_the_bottom_changes_nothing_but_the_streak(capture_events):
    _judge(True, True)
    with capture_events() as events:
        _judge(False)
    assert trust_balance("Hugin", "research") == (0, 0)
    assert events.named("trust.changed") == []


def test_trust_is_kept_per_holder_and_per_task_type():
    _judge(True, True, True)
    assert trust_balance("Hugin", "research") == (1, 0)
    assert trust_balance("Hugin", "code") == (0, 0)
    assert trust_balance("Munin", "research") == (0, 0)


def test_the_streak_length_is_a_setting(settings):
    settings.CROWS_TRUST_STREAK = 1
    _judge(True)
    assert trust_balance("Hugin", "research") == (1, 0)


def test_the_ledger_is_append_only_with_the_running_level_on_each_entry():
    _judge(True, True, True, False)
    rows = list(TrustEntry.objects.order_by("id").values_list("outcome", "level_before", "level", "streak"))
    assert rows == [
        ("approved", 0, 0, 1), ("approved", 0, 0, 2), ("approved", 0, 1, 0), ("rejected", 1, 0, 0),
    ]


def test_an_unknown_task_type_is_refused():
    with pytest.raises(BadInput, match="task_type"):
        record_trust_outcome("Hugin", task_type="juggling", approved=True)


def test_seeding_follows_the_ladder_and_announces_each_promotion(capture_events):
    with capture_events() as events:
        assert seed_trust("flock", task_type="code") == 6
        assert seed_trust("flock", task_type="code") == 0
    assert trust_balance("flock", "code") == (2, 0)
    assert [(c["from"], c["to"]) for c in events.named("trust.changed")] == [(0, 1), (1, 2)]
    assert set(TrustEntry.objects.values_list("source", flat=True)) == {"seed"}


def test_the_seed_command_makes_everyone_trusted_for_every_task_type():
    call_command("trust_seed", "--all")
    ledger = trust_ledger(["Hugin"])
    assert ledger["holders"]["flock"]["chat"]["level"] == 2
    assert ledger["holders"]["Elder"]["writing"]["level"] == 2


def test_get_trust_returns_levels_streaks_and_counts_per_holder_and_task_type():
    _judge(True, True, True, True, False, holder="Pepper", task_type="code")
    body = Client().get("/api/trust").json()
    assert body["levels"] == {"0": "stranger", "1": "regular", "2": "trusted"}
    assert body["streak_to_promote"] == 3
    assert body["task_types"] == ["writing", "research", "code", "planning", "data", "chat"]
    assert body["holders"]["Pepper"]["code"] == {
        "level": 0, "level_name": "stranger", "streak": 0, "approvals": 4, "rejections": 1,
    }
    # Every holder appears with every task type, strangers included.
    assert set(body["holders"]) >= {"flock", "Quill", "Boss", "Sentry", "Elder"}
    assert body["holders"]["flock"]["data"] == {
        "level": 0, "level_name": "stranger", "streak": 0, "approvals": 0, "rejections": 0,
    }


def test_all_trusted_reads_every_holders_newest_entry_at_once(db):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from trust.actions import record_trust_outcome, seed_trust
    from trust.queries import all_trusted

    for crow in ("Hugin", "Munin", "Elder"):
        seed_trust(crow, task_type="writing")
    with CaptureQueriesContext(connection) as seen:
        assert all_trusted(["Hugin", "Munin", "Elder"], "writing")
    assert len(seen.captured_queries) == 1
    assert not all_trusted(["Hugin", "Munin", "Pepper"], "writing")  # a stranger among them
    record_trust_outcome("Munin", task_type="writing", approved=False)  # demoted one level
    assert not all_trusted(["Hugin", "Munin", "Elder"], "writing")
    assert all_trusted(["Hugin", "Elder"], "writing")
