"""Approvals and verdicts: one verdict per target, a 404 for anything not waiting, a 400
for a bad body, timeouts that fail safe and never move trust."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.utils import timezone

from flock import worker
from flock.errors import BadInput, NotFound
from trust.actions import open_approval, record_auto_verdict, record_owner_verdict, time_out_approval
from trust.actions import verdicts as verdicts_module
from trust.models import Approval, Verdict
from trust.queries import pending_approvals, trust_balance

pytestmark = pytest.mark.django_db


@pytest.fixture
def heard(monkeypatch):
    calls: list[Verdict] = []
    monkeypatch.setattr(verdicts_module, "_verdict_hooks", [calls.append])
    return calls


def _open(item_id: str = "Lx-1", target: str = "triage", holders=("flock",)) -> Approval:
    return open_approval(item_id, target=target, list_id="Lx", task_type="code", holders=list(holders))


def test_an_owner_answer_records_one_verdict_moves_trust_and_wakes_the_pipeline(capture_events, heard, settings):
    settings.CROWS_TRUST_STREAK = 1
    _open(holders=["Pepper", "Elder"], target="output")
    with capture_events() as events:
        verdict = record_owner_verdict("Lx-1", target="output", approve=True)
    assert verdict.verdict == "approved" and heard == [verdict]
    assert events.named("verdict") == [
        {"list_id": "Lx", "item_id": "Lx-1", "target": "output", "verdict": "approved", "ts": events.named("verdict")[0]["ts"]}
    ]
    assert [c["holder"] for c in events.named("trust.changed")] == ["Pepper", "Elder"]
    assert trust_balance("Pepper", "code") == (1, 0)


def test_a_second_answer_finds_nothing_waiting(heard):
    _open()
    record_owner_verdict("Lx-1", target="triage", approve=False)
    with pytest.raises(NotFound, match="nothing is waiting"):
        record_owner_verdict("Lx-1", target="triage", approve=True)
    assert Verdict.objects.get().verdict == "rejected" and len(heard) == 1


def test_nothing_waiting_is_not_found():
    with pytest.raises(NotFound):
        record_owner_verdict("L404-1", target="triage", approve=True)
    _open()
    with pytest.raises(NotFound):
        record_owner_verdict("Lx-1", target="output", approve=True)


@pytest.mark.parametrize(
    "body, words",
    [
        ({"target": "triage", "approve": True}, "item_id is required"),
        ({"item_id": 5, "target": "triage", "approve": True}, "item_id must be a non-empty string"),
        # Never looked up, nor echoed back in a 404.
        ({"item_id": "L" * 100_000, "target": "output", "approve": True}, "item_id must be at most 100 characters"),
        ({"item_id": "Lx-1", "approve": True}, "target is required"),
        ({"item_id": "Lx-1", "target": "answer", "approve": True}, "target must be triage or output"),
        ({"item_id": "Lx-1", "target": "triage"}, "approve is required"),
        ({"item_id": "Lx-1", "target": "triage", "approve": None}, "approve is required"),
        ({"item_id": "Lx-1", "target": "triage", "approve": "true"}, "approve must be true or false"),
        ({"item_id": "Lx-1", "target": "triage", "approve": 0}, "approve must be true or false"),
    ],
)
def test_a_bad_body_is_refused_and_never_read_as_a_no(body, words):
    _open()
    with pytest.raises(BadInput, match=words):
        record_owner_verdict(body.get("item_id"), target=body.get("target"), approve=body.get("approve"))
    assert not Verdict.objects.exists()
    response = Client().post("/api/verdicts", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 400 and words in response.json()["message"]


def test_the_api_answers_204_then_404():
    _open()
    client = Client()
    body = json.dumps({"item_id": "Lx-1", "target": "triage", "approve": True})
    first = client.post("/api/verdicts", data=body, content_type="application/json")
    assert first.status_code == 204 and first.content == b""
    second = client.post("/api/verdicts", data=body, content_type="application/json")
    assert second.status_code == 404 and "nothing is waiting" in second.json()["message"]
    for raw in ("{oops", "[]", '"approve"'):
        assert client.post("/api/verdicts", data=raw, content_type="application/json").status_code == 400


def test_a_timeout_is_scheduled_with_the_approval_and_fails_safe_without_moving_trust(capture_events, heard):
    from django_tasks_db.models import DBTaskResult

    approval = _open()
    task = DBTaskResult.objects.get(task_path="trust.tasks.time_out_approval_task")
    assert abs((task.run_after - approval.deadline).total_seconds()) < 0.001
    assert task.args_kwargs["args"] == ["Lx-1", "triage", 1]  # item, target, attempt
    assert worker.run_pending() == 0  # not due yet

    past = timezone.now() - timedelta(seconds=1)
    Approval.objects.update(deadline=past)
    DBTaskResult.objects.update(run_after=past)
    with capture_events() as events:
        worker.run_pending()
    assert events.names() == ["verdict"] and events.named("verdict")[0]["verdict"] == "timeout"
    assert [v.verdict for v in heard] == ["timeout"]
    assert trust_balance("flock", "code") == (0, 0)
    with pytest.raises(NotFound):
        record_owner_verdict("Lx-1", target="triage", approve=True)


def test_a_timeout_after_an_answer_does_nothing_and_an_early_one_waits(heard):
    _open()
    assert time_out_approval("Lx-1", target="triage") is None  # not due: re-scheduled
    assert not Verdict.objects.exists()
    record_owner_verdict("Lx-1", target="triage", approve=True)
    Approval.objects.update(deadline=timezone.now() - timedelta(seconds=1))
    assert time_out_approval("Lx-1", target="triage") is None
    assert Verdict.objects.get().verdict == "approved"


def test_an_answer_after_the_deadline_is_too_late_even_before_the_timeout_task_runs(capture_events, heard):
    # Fail safe: the worker may be busy when the deadline passes; the owner's late click
    # records the timeout there and then, moves no trust, and is refused with a 404.
    _open(holders=["Pepper"], target="output")
    Approval.objects.update(deadline=timezone.now() - timedelta(milliseconds=100))
    with capture_events() as events, pytest.raises(NotFound, match="timed out at .*counts as rejected"):
        record_owner_verdict("Lx-1", target="output", approve=True)
    assert [v["verdict"] for v in events.named("verdict")] == ["timeout"] and events.named("trust.changed") == []
    assert [v.verdict for v in heard] == ["timeout"] and Verdict.objects.get().verdict == "timeout"
    assert trust_balance("Pepper", "code") == (0, 0)
    assert time_out_approval("Lx-1", target="output") is None  # the queued task finds it decided


def test_a_late_answer_to_an_answered_approval_is_plainly_not_found(heard):
    _open()
    record_owner_verdict("Lx-1", target="triage", approve=True)
    Approval.objects.update(deadline=timezone.now() - timedelta(seconds=1))
    with pytest.raises(NotFound) as raised:
        record_owner_verdict("Lx-1", target="triage", approve=False)
    assert "timed out" not in raised.value.message and Verdict.objects.get().verdict == "approved"


def test_auto_verdicts_are_one_per_target_too(capture_events, heard):
    with capture_events() as events:
        record_auto_verdict("Lx-1", target="triage", list_id="Lx")
    assert events.named("verdict")[0]["verdict"] == "auto" and heard == []
    with pytest.raises(IntegrityError), transaction.atomic():
        record_auto_verdict("Lx-1", target="triage", list_id="Lx")


def test_pending_approvals_are_the_ones_without_a_verdict():
    _open("Lx-1")
    _open("Lx-2", target="output", holders=["Hugin"])
    record_owner_verdict("Lx-1", target="triage", approve=True)
    (pending,) = pending_approvals()
    assert pending["item_id"] == "Lx-2" and pending["target"] == "output" and pending["holders"] == ["Hugin"]


def test_start_up_recovery_reschedules_every_waiting_timeout():
    from django_tasks_db.models import DBTaskResult

    from trust.actions import reschedule_timeouts

    _open("Lx-1")
    _open("Lx-2")
    DBTaskResult.objects.all().delete()
    assert reschedule_timeouts() == 2
    assert DBTaskResult.objects.filter(task_path="trust.tasks.time_out_approval_task").count() == 2


def test_flightlog_reports_the_owner_approval_rate_per_model(client):
    """Owner output verdicts feed GET /api/flightlog's approval rate (docs/GOVERNANCE.md)."""
    from django.db import transaction

    from flock.actions import record_flight
    from trust.models import Verdict

    with transaction.atomic():
        for n in (1, 2, 3):
            record_flight(crow="Hugin", provider="mock", model="mock", task="answer", task_type="writing",
                          ok=True, item_id=f"Lx-{n}", list_id="Lx")
    Verdict.objects.create(item_id="Lx-1", target="output", list_id="Lx", verdict=Verdict.Value.APPROVED)
    Verdict.objects.create(item_id="Lx-2", target="output", list_id="Lx", verdict=Verdict.Value.REJECTED)
    Verdict.objects.create(item_id="Lx-3", target="output", list_id="Lx", verdict=Verdict.Value.AUTO)
    (row,) = client.get("/api/flightlog").json()["by_model_and_task_type"]
    assert row["owner_verdicts"] == 2 and row["approval_rate"] == 0.5


def test_flightlog_judges_triage_calls_by_the_owners_triage_verdicts(client):
    from django.db import transaction

    from flock.actions import record_flight
    from trust.models import Verdict

    with transaction.atomic():
        for n in (1, 2):
            record_flight(crow="Sentry", provider="mock", model="mock", task="triage", task_type="",
                          ok=True, item_id=f"Lx-{n}", list_id="Lx")
    Verdict.objects.create(item_id="Lx-1", target="triage", list_id="Lx", verdict=Verdict.Value.APPROVED)
    Verdict.objects.create(item_id="Lx-2", target="triage", list_id="Lx", verdict=Verdict.Value.APPROVED)
    # An output verdict on the same item says nothing of its triage.
    Verdict.objects.create(item_id="Lx-2", target="output", list_id="Lx", verdict=Verdict.Value.REJECTED)
    (row,) = client.get("/api/flightlog").json()["by_model_and_task_type"]
    assert row["task_type"] == "triage" and row["owner_verdicts"] == 2 and row["approval_rate"] == 1.0
