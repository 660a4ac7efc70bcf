"""Owner decisions (docs/GOVERNANCE.md): the exact phrase reinstates, `retire` retires,
anything else keeps (fail safe), the deadline closes as `timeout`; the API answers 404
when nothing is open under an id (also for a second answer) and 400 for a bad body."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from flock import worker
from flock.errors import BadInput, Conflict, NotFound
from flock.models import Crow
from trust.actions import (
    answer_decision,
    expire_decision,
    open_decision,
    quarantine_crow,
    reinstate_crow,
    reschedule_decision_timeouts,
    retire_crow,
)
from trust.actions import closing as closing_module
from trust.models import Breach, Decision
from trust.queries import decision_record

pytestmark = pytest.mark.django_db


def quarantined_decision(crow: str = "Rook", nest_id: str = "todo") -> Decision:
    quarantine_crow(crow, breach="redo", evidence="delivered on todo-1, held by Hugin", nest_id=nest_id, by="Sentry")
    return open_decision(
        kind=Decision.Kind.QUARANTINE, subject=crow, crow=crow,
        question=f"Reinstate {crow}?", phrase=f"yes, reinstate {crow}",
        recommendation="Read the evidence first.", evidence="delivered on todo-1", nest_id=nest_id,
    )


def post_json(client, path: str, body: object):
    return client.post(path, data=json.dumps(body), content_type="application/json")


def test_opening_a_decision_emits_its_record(capture_events, settings):
    settings.CROWS_DECISION_TIMEOUT_S = 120
    with capture_events() as events:
        decision = quarantined_decision()
    assert events.names() == ["crow.quarantined", "decision.opened"]
    quarantined = events.named("crow.quarantined")[0]
    assert {k: quarantined[k] for k in ("nest_id", "crow", "breach", "score", "evidence", "msg_id", "by")} == {
        "nest_id": "todo", "crow": "Rook", "breach": "redo", "score": 1.0,
        "evidence": "delivered on todo-1, held by Hugin", "msg_id": "", "by": "Sentry",
    }
    opened = events.named("decision.opened")[0]
    assert opened["decision_id"] == decision.decision_id and opened["status"] == "open"
    assert opened["phrase"] == "yes, reinstate Rook" and opened["crow"] == "Rook"
    assert opened["question"] and opened["recommendation"] and opened["nest_id"] == "todo"
    assert set(opened) >= {"subject", "options", "opened_at", "deadline", "outcome", "evidence", "ts"}
    opened_at = timezone.datetime.fromisoformat(opened["opened_at"])
    deadline = timezone.datetime.fromisoformat(opened["deadline"])
    assert (deadline - opened_at) == timedelta(seconds=120)


def test_the_exact_phrase_reinstates(capture_events):
    decision = quarantined_decision()
    with capture_events() as events:
        closed = answer_decision(decision, answer="  YES, reinstate   rook ", by="owner")
    assert (closed.status, closed.outcome, closed.answered_by) == ("closed", "reinstated", "owner")
    assert Crow.objects.get(name="Rook").status == "active"
    assert events.names() == ["crow.reinstated", "decision.closed"]
    closed_event = events.named("decision.closed")[0]
    assert {k: closed_event[k] for k in ("decision_id", "outcome", "by", "status", "crow", "nest_id")} == {
        "decision_id": decision.decision_id, "outcome": "reinstated", "by": "owner",
        "status": "closed", "crow": "Rook", "nest_id": "todo",
    }


@pytest.mark.parametrize("answer", ["no", "yes", "reinstate Rook", "yes reinstate Rook please", "A"])
def test_anything_but_the_phrase_keeps_the_quarantine(answer):
    decision = quarantined_decision()
    closed = answer_decision(decision, answer=answer)
    assert closed.outcome == "kept"
    assert Crow.objects.get(name="Rook").status == "quarantined"


def test_retire_retires(capture_events):
    decision = quarantined_decision()
    with capture_events() as events:
        closed = answer_decision(decision, answer="Retire", by="admin:smokey")
    assert closed.outcome == "retired"
    assert Crow.objects.get(name="Rook").status == "retired"
    assert events.names() == ["crow.retired", "decision.closed"]
    assert events.named("crow.retired")[0]["retired_by"] == "admin:smokey"
    assert events.named("decision.closed")[0]["by"] == "admin:smokey"


def test_retire_of_a_crow_whose_role_is_kept_is_a_409_and_the_decision_stays_open(client):
    decision = quarantined_decision("Boss")
    response = post_json(client, f"/api/decisions/{decision.decision_id}", {"answer": "retire"})
    assert response.status_code == 409
    assert "cannot be retired" in response.json()["message"] and decision.phrase in response.json()["message"]
    assert Decision.objects.get(pk=decision.pk).status == "open"
    assert Crow.objects.get(name="Boss").status == "quarantined"
    # The phrase still works.
    assert answer_decision(decision, answer=decision.phrase).outcome == "reinstated"


def test_the_sentrys_flag_offers_retire_only_for_a_crow_that_can_be_retired():
    from nests.actions.chat.sentry import Finding, _flag_text

    finding = Finding("redo", 1.0, "delivered twice.")
    # "retire" said in a room is talk, so the flag points at the card's button instead.
    assert "press Retire on its decision card" in _flag_text(Crow.objects.get(name="Rook"), finding, "yes, reinstate Rook", "")
    assert "retire" not in _flag_text(Crow.objects.get(name="Boss"), finding, "yes, reinstate Boss", "")


def test_a_second_answer_finds_nothing_open():
    decision = quarantined_decision()
    answer_decision(decision, answer="no")
    with pytest.raises(NotFound):
        answer_decision(decision.decision_id, answer="yes, reinstate Rook")
    assert Crow.objects.get(name="Rook").status == "quarantined"


def test_no_answer_by_the_deadline_closes_it_as_timeout(settings, capture_events):
    # A deadline that has already come: the scheduled timeout task is due at once.
    settings.CROWS_DECISION_TIMEOUT_S = 0
    decision = quarantined_decision()
    with capture_events() as events:
        assert worker.run_pending() >= 1
    assert events.names() == ["decision.closed"]
    payload = events.named("decision.closed")[0]
    assert (payload["outcome"], payload["by"]) == ("timeout", "timeout")
    assert Crow.objects.get(name="Rook").status == "quarantined"
    assert expire_decision(decision) is None
    with pytest.raises(NotFound):
        answer_decision(decision, answer="yes, reinstate Rook")


def test_an_answer_after_the_deadline_closes_it_as_timeout_even_before_the_task_runs(capture_events):
    decision = quarantined_decision()
    Decision.objects.update(deadline=timezone.now() - timedelta(milliseconds=100))
    with capture_events() as events, pytest.raises(NotFound, match="timed out at"):
        answer_decision(decision.decision_id, answer="yes, reinstate Rook")
    assert [(p["outcome"], p["by"]) for p in events.named("decision.closed")] == [("timeout", "timeout")]
    assert events.named("crow.reinstated") == [] and Crow.objects.get(name="Rook").status == "quarantined"
    assert expire_decision(decision) is None


def test_an_early_timeout_waits_and_start_up_reschedules_open_decisions():
    decision = quarantined_decision()
    assert expire_decision(decision) is None
    assert Decision.objects.get().status == "open"
    assert reschedule_decision_timeouts() == 1


def test_decision_hooks_hear_every_close(monkeypatch):
    heard: list[Decision] = []
    monkeypatch.setattr(closing_module, "_closed_hooks", [heard.append])
    decision = quarantined_decision()
    answer_decision(decision, answer="no")
    assert [d.decision_id for d in heard] == [decision.decision_id]


def test_a_choice_decision_takes_one_of_its_options():
    decision = open_decision(subject="launch date", question="Which date?", options=["A: Monday", "B: Friday"],
                             recommendation="A: the crows are rested", nest_id="todo")
    assert answer_decision(decision, answer="b: friday").outcome == "B: Friday"
    with pytest.raises(BadInput):
        open_decision(subject="x", question="y?", options=["only one"])


def test_quarantine_and_reinstate_refuse_the_wrong_state():
    # Reinstating an active crow is the crow's state refusing a well-formed request (409).
    with pytest.raises(Conflict):
        reinstate_crow("Rook")
    quarantine_crow("Rook", breach="owner_report", evidence="by hand", by="admin:smokey")
    assert Breach.objects.get().kind == "owner_report"
    with pytest.raises(BadInput):
        quarantine_crow("Rook", breach="owner_report", evidence="again")
    with pytest.raises(NotFound):
        quarantine_crow("Nobody", breach="redo", evidence="")
    with pytest.raises(BadInput):
        retire_crow("Quill", by="owner")


# --- the API -----------------------------------------------------------------------------


def test_the_api_lists_reads_and_answers_decisions(client):
    decision = quarantined_decision()
    listed = client.get("/api/decisions").json()
    assert [d["decision_id"] for d in listed] == [decision.decision_id]
    assert client.get("/api/decisions?status=open").json() == listed
    assert client.get("/api/decisions?status=closed").json() == []
    one = client.get(f"/api/decisions/{decision.decision_id}")
    assert one.status_code == 200 and one.json() == decision_record(Decision.objects.get())
    r = post_json(client, f"/api/decisions/{decision.decision_id}", {"answer": "yes, reinstate Rook"})
    assert r.status_code == 200, r.content
    assert (r.json()["status"], r.json()["outcome"], r.json()["answered_by"]) == ("closed", "reinstated", "owner")
    assert Crow.objects.get(name="Rook").status == "active"
    assert [d["decision_id"] for d in client.get("/api/decisions?status=closed").json()] == [decision.decision_id]


def test_the_api_answers_404_when_nothing_is_open_under_the_id(client):
    decision = quarantined_decision()
    assert post_json(client, "/api/decisions/dec-999", {"answer": "no"}).status_code == 404
    assert client.get("/api/decisions/dec-999").status_code == 404
    assert post_json(client, f"/api/decisions/{decision.decision_id}", {"answer": "no"}).status_code == 200
    again = post_json(client, f"/api/decisions/{decision.decision_id}", {"answer": "yes, reinstate Rook"})
    assert again.status_code == 404 and again.json()["message"]
    assert Crow.objects.get(name="Rook").status == "quarantined"


@pytest.mark.parametrize("body", [{}, {"answer": 3}, {"answer": None}, {"answer": ""}, {"answer": "   "},
                                  {"answer": ["yes"]}, [1], "no", {"answer": "x" * 301}])
def test_the_api_answers_400_for_a_bad_body(client, body):
    decision = quarantined_decision()
    r = post_json(client, f"/api/decisions/{decision.decision_id}", body)
    assert r.status_code == 400 and r.json()["message"]
    assert Decision.objects.get().status == "open"


def test_bad_json_and_a_bad_status_filter_are_400(client):
    decision = quarantined_decision()
    r = client.post(f"/api/decisions/{decision.decision_id}", data="{nope", content_type="application/json")
    assert r.status_code == 400
    assert client.get("/api/decisions?status=maybe").status_code == 400


def test_every_governance_event_is_a_capability(client):
    state = client.get("/api/state").json()
    assert {"decision.opened", "decision.closed", "crow.quarantined", "crow.reinstated", "crow.retired"} <= set(
        state["capabilities"]
    )
    assert state["open_decisions"] == []


def test_reinstating_or_retiring_directly_closes_the_open_decision(capture_events):
    decision = quarantined_decision()
    with capture_events() as events:
        reinstate_crow("Rook", by="admin:smokey")
    assert events.names() == ["crow.reinstated", "decision.closed"]
    closed = Decision.objects.get(pk=decision.pk)
    assert (closed.status, closed.outcome, closed.answered_by) == ("closed", "reinstated", "admin:smokey")

    again = quarantined_decision()
    retire_crow("Rook", by="admin:smokey", reason="enough")
    closed = Decision.objects.get(pk=again.pk)
    assert (closed.status, closed.outcome) == ("closed", "retired")


def test_answering_after_the_crow_was_reinstated_elsewhere_changes_nothing():
    decision = quarantined_decision()
    Crow.objects.filter(name="Rook").update(status="active")
    assert answer_decision(decision, answer="retire").outcome == "kept"
    assert Crow.objects.get(name="Rook").status == "active"


def test_the_owner_reinstates_a_crow_kept_quarantined_over_the_api(client, capture_events):
    # "Keep quarantined" (or a timeout) closes the decision with the crow still caged; the
    # owner's later yes is POST /api/crows/{name}/reinstate, the crow page's button.
    decision = quarantined_decision()
    answer_decision(decision, answer="no")
    with capture_events() as events:
        r = post_json(client, "/api/crows/rook/reinstate", {})
    assert r.status_code == 200, r.content
    assert r.json()["name"] == "Rook" and r.json()["status"] == "active"
    assert events.named("crow.reinstated")[0]["by"] == "owner"
    assert Decision.objects.get(pk=decision.pk).outcome == "kept"  # the closed decision stays as it was
    # Not quarantined (any more): a 409 that says so (the crow's state); no such crow: a 404.
    again = post_json(client, "/api/crows/Rook/reinstate", {})
    assert again.status_code == 409 and "not quarantined" in again.json()["message"]
    assert post_json(client, "/api/crows/Nobody/reinstate", {}).status_code == 404


def test_reinstating_over_the_api_closes_an_open_decision_as_reinstated(client):
    decision = quarantined_decision()
    assert post_json(client, "/api/crows/Rook/reinstate", {}).status_code == 200
    closed = Decision.objects.get(pk=decision.pk)
    assert (closed.status, closed.outcome, closed.answered_by) == ("closed", "reinstated", "owner")


def test_the_notice_to_the_owner_points_at_what_works(db):
    from nests.actions import post_message
    from nests.models import NestMessage

    decision = quarantined_decision()
    post_message("todo", author="owner", text="@Rook are you there?")
    notice = NestMessage.objects.filter(author="harness").latest("id").text
    assert f"post “{decision.phrase}” to reinstate it, or press Retire on the decision's card." in notice
    answer_decision(decision, answer="no")
    post_message("todo", author="owner", text="@Rook still there?")
    notice = NestMessage.objects.filter(author="harness").latest("id").text
    assert "Reinstate, on /crows/Rook" in notice
