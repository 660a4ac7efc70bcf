"""The flight log summary per model and task type."""

from __future__ import annotations

from django.db import transaction

from flock.actions import record_flight
from flock.queries import flightlog_summary


def _flight(**kw):
    base = dict(crow="Hugin", provider="mock", model="mock", task="answer", ok=True, tokens_in=10, tokens_out=20)
    base.update(kw)
    with transaction.atomic():
        return record_flight(**base)


def test_summary_counts_calls_tokens_latency_and_failures(db):
    for latency in (1, 2, 3, 4, 100):
        _flight(task_type="writing", latency_ms=latency, item_id=f"L1-{latency}")
    _flight(task_type="writing", ok=False, error="boom", latency_ms=5)
    _flight(task_type="code", model="gpt", provider="openai", latency_ms=50)
    rows = {(r["model"], r["task_type"]): r for r in flightlog_summary()}
    writing = rows[("mock", "writing")]
    assert writing["calls"] == 6 and writing["tokens_in"] == 60 and writing["tokens_out"] == 120
    assert writing["latency_p50_ms"] in (3, 4) and writing["latency_p95_ms"] == 100
    assert writing["failure_rate"] == round(1 / 6, 4)
    assert writing["approval_rate"] is None
    assert rows[("gpt", "code")]["calls"] == 1


def test_summary_reports_owner_approval_rate_once_verdicts_exist(db):
    _flight(task_type="writing", item_id="L1-1")
    _flight(task_type="writing", item_id="L1-2")
    _flight(task_type="writing", item_id="L1-3")
    (row,) = flightlog_summary(approvals={"L1-1": True, "L1-2": False})
    assert row["owner_verdicts"] == 2 and row["approval_rate"] == 0.5


def test_flightlog_endpoint_answers(client, db):
    _flight(task_type="chat")
    body = client.get("/api/flightlog").json()
    assert body["by_model_and_task_type"][0]["task_type"] == "chat"


def test_triage_and_banter_calls_do_not_borrow_the_answer_verdicts(db):
    # The Sentry triaged L1-1 on one model, Hugin answered it on another, and banter
    # mentioned it: only the answer's model is judged by the answer's verdict.
    _flight(crow="Sentry", provider="openai", model="triage-m", task="triage", task_type="writing", item_id="L1-1")
    _flight(task="answer", task_type="writing", item_id="L1-1")
    _flight(provider="openai", model="banter-m", task="banter", task_type="writing", item_id="L1-1")
    rows = {r["model"]: r for r in flightlog_summary(approvals={"L1-1": False})}
    assert (rows["mock"]["owner_verdicts"], rows["mock"]["approval_rate"]) == (1, 0.0)
    assert (rows["triage-m"]["owner_verdicts"], rows["triage-m"]["approval_rate"]) == (0, None)
    assert (rows["banter-m"]["owner_verdicts"], rows["banter-m"]["approval_rate"]) == (0, None)
    # Triage calls are judged by the triage verdicts, when given.
    rows = {r["model"]: r for r in flightlog_summary(approvals={"L1-1": False}, triage_approvals={"L1-1": True})}
    assert rows["triage-m"]["approval_rate"] == 1.0 and rows["mock"]["approval_rate"] == 0.0
