"""Orchestration scores (docs/GOVERNANCE.md): every pick of a crow for a request, or of a
model for a crow, is scored by Jev, logged and listed by GET /api/orchestration; a
low-score pick goes back to the picker as a nudge."""

from __future__ import annotations

import re

import pytest
from django.db import transaction

from flock.models import Crow
from flock.vocab import HARNESS, OWNER
from nests.actions import create_nest, post_message
from nests.actions.chat import orchestration, react
from nests.models import Expectation, Invocation, NestMessage, OrchestrationDecision
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import run_crows
from trust.actions import quarantine_crow

pytestmark = pytest.mark.usefixtures("fake_jev")

fake_jev = chat_support.fake_jev
script_brains = chat_support.script_brains

PROFILE_FIT = {"Hugin": 0.30, "Munin": 0.02}


@pytest.fixture
def launch(db, monkeypatch):
    # Jev's fit, made deterministic: Hugin fits every task, Munin hardly any.
    def fit(task: str, profile: str) -> float:
        for name, crow in ((c.name, c) for c in Crow.objects.all()):
            if profile.startswith(f"{crow.epithet}. {crow.strength}"):
                return PROFILE_FIT.get(name, 0.0)
        return 0.0

    monkeypatch.setattr("flock.jev.fit_score", fit)
    return create_nest("Launch", crows=["Hugin", "Munin"])


def test_a_low_score_pick_nudges_the_picker(launch, client, capture_events):
    with capture_events() as events:
        pick = post_message("launch", author="Boss", text="@Munin draft the launch tweet", kind="request")
    d = OrchestrationDecision.objects.get(msg_id=pick.msg_id)
    assert (d.kind, d.decider, d.crow, d.band) == ("crow", "Boss", "Munin", "low")
    assert d.score == pytest.approx(0.02 / 0.30, abs=0.01)
    assert d.alternatives["Hugin"] > d.alternatives["Munin"]
    nudge = NestMessage.objects.get(kind="nudge")
    assert (nudge.author, nudge.to, nudge.refers_to) == ("harness", "Boss", pick.msg_id)
    assert re.match(rf"\[NUDGE {pick.msg_id}\] \[nudge 1/3\] Deadline [0-9T:.-]+Z: @Boss", nudge.text), nudge.text
    assert "Hugin fits better" in nudge.text
    assert d.nudge_msg_id == nudge.msg_id
    assert nudge.invocation.crow == "Boss"
    payload = events.named("orchestration.decided")[0]
    assert {"decision_id", "kind", "decider", "crow", "model", "task", "task_type", "score", "band", "low_score",
            "factors", "alternatives", "nest_id", "msg_id", "nudge_msg_id", "created_at", "ts"} == set(payload)
    body = client.get("/api/orchestration").json()
    assert [(x["decision_id"], x["score"]) for x in body["decisions"]] == [(d.decision_id, d.score)]
    assert body["decisions"][0]["nudge_msg_id"] == nudge.msg_id
    assert client.get("/api/orchestration?crow=Hugin").json()["decisions"] == []
    assert client.get("/api/orchestration?kind=sideways").status_code == 400


def test_a_good_pick_is_logged_and_nudges_nobody(launch):
    pick = post_message("launch", author="Quill", text="@Hugin draft the launch tweet", kind="request")
    d = OrchestrationDecision.objects.get(msg_id=pick.msg_id)
    assert (d.decider, d.crow, d.band, d.score) == ("Quill", "Hugin", "ok", 1.0)
    assert not NestMessage.objects.filter(kind="nudge").exists()


def test_dispatch_picks_and_model_picks_are_logged(launch, client, script_brains):
    script_brains(lambda request: "Noted.")
    # Nobody may claim yet: Quill routes it to the best fit (a pick by Quill).
    post_message("launch", author="owner", text="draft the launch tweet", kind="request")
    run_crows()
    # A regular may be picked by dispatch itself.
    chat_support.make_trusted("Hugin", "writing", level=1)
    post_message("launch", author="owner", text="draft the launch email", kind="request")
    post_message("launch", author="owner", text="@Boss hatch a crow named Wren who is good at data")
    run_crows()
    decisions = client.get("/api/orchestration").json()["decisions"]
    kinds = [(x["kind"], x["decider"], x["crow"]) for x in decisions]
    assert ("crow", "Quill", "Hugin") in kinds and ("crow", "dispatch", "Hugin") in kinds
    model = next(x for x in decisions if x["kind"] == "model")
    assert (model["decider"], model["crow"], model["model"]) == ("Boss", "Wren", "mock")
    assert {"approval", "speed", "cost", "reliability"} <= set(model["factors"])
    assert 0 <= model["score"] <= 1


def test_the_orchestration_event_is_listed_in_the_capabilities(client, db):
    assert "orchestration.decided" in client.get("/api/state").json()["capabilities"]


def test_the_owner_moving_a_crow_to_another_model_is_scored(launch, client, capture_events):
    with capture_events() as events:
        post_message("launch", author="owner", text="@Boss switch Munin to openai:gpt-4o-mini")
        run_crows()
    assert Crow.objects.get(name="Munin").model == "openai:gpt-4o-mini"
    changed = events.named("crow.updated")
    assert changed == [{"crow": "Munin", "by": "owner", "changes": {"model": "openai:gpt-4o-mini"},
                        "previous": {"model": changed[0]["previous"]["model"]}, "model": "openai:gpt-4o-mini",
                        "ts": changed[0]["ts"]}]
    decision = client.get("/api/orchestration?kind=model").json()["decisions"][-1]
    assert (decision["decider"], decision["crow"], decision["model"]) == ("owner", "Munin", "openai:gpt-4o-mini")
    reply = NestMessage.objects.filter(author="Boss").last()
    assert reply is not None and "Moved Munin" in reply.text and decision["decision_id"] in reply.text
    assert "crow.updated" in client.get("/api/state").json()["capabilities"]
    # The same order again changes nothing, scores nothing, and Boss says so.
    with capture_events() as again:
        post_message("launch", author="owner", text="@Boss switch Munin to openai:gpt-4o-mini")
        run_crows()
    assert again.named("crow.updated") == [] and again.named("orchestration.decided") == []
    assert "Munin already thinks with openai:gpt-4o-mini" in NestMessage.objects.filter(author="Boss").last().text


def test_the_owner_picking_a_model_on_the_settings_page_is_scored_once(db, client):
    response = client.patch("/api/crows/Munin", {"model": "openai:gpt-4o-mini", "confirm": True}, content_type="application/json")
    assert response.status_code == 200
    decisions = client.get("/api/orchestration?kind=model&crow=Munin").json()["decisions"]
    assert [(d["decider"], d["model"]) for d in decisions] == [("owner", "openai:gpt-4o-mini")]
    # An edit that leaves the model alone is not a model pick.
    client.patch("/api/crows/Munin", {"epithet": "the Rememberer"}, content_type="application/json")
    assert len(client.get("/api/orchestration?kind=model&crow=Munin").json()["decisions"]) == 1


def test_boss_moving_a_crow_logs_one_model_decision(launch, client):
    post_message("launch", author="owner", text="@Boss switch Munin to openai:gpt-4o-mini")
    run_crows()
    decisions = client.get("/api/orchestration?kind=model&crow=Munin").json()["decisions"]
    assert len(decisions) == 1 and decisions[0]["nest_id"] == "launch"


@pytest.mark.parametrize("grounding", ["quarantined", "out of the room"])
def test_a_nudge_the_picker_cannot_receive_goes_to_the_owner_and_its_expectation(launch, capture_events, grounding):
    # Issue 30: a nudge to a crow that is quarantined, retired or out of the room is never
    # dropped; the owner hears of it in the room and its expectation records why.
    pick = post_message("launch", author="Quill", text="@Munin draft the launch tweet", kind="request")
    OrchestrationDecision.objects.all().delete()
    nudges = NestMessage.objects.filter(kind="nudge").count()  # Quill's, while it could still hear it
    if grounding == "quarantined":
        quarantine_crow("Quill", breach="owner_report", evidence="a test")
        why = "Quill is quarantined and cannot be nudged"
    else:
        Crow.objects.filter(name="Quill").update(role=Crow.Role.WORKER)  # no longer everywhere
        why = "Quill is no longer in launch and cannot be nudged there"
    with transaction.atomic():  # as inside the post that opened the request
        effects = orchestration.score_crow_pick(pick, decider="Quill", crow="Munin", task=pick.text, task_type="writing")
    assert [s.to for s in effects.say] == [OWNER] and not effects.invoke
    with capture_events() as events:
        (told,) = react.apply(effects, room=launch)
    assert NestMessage.objects.filter(kind="nudge").count() == nudges
    assert (told.author, told.to, told.refers_to) == (HARNESS, OWNER, pick.msg_id)
    d = OrchestrationDecision.objects.get(msg_id=pick.msg_id)
    assert told.text.startswith(f"@{OWNER}, {why}: Jev's nudge on {d.decision_id} was not delivered")
    exp = Expectation.objects.get(crow="Quill")
    assert (exp.status, exp.message.msg_id, exp.summary_msg_id, exp.outcome_msg_id) == (
        "escalated", pick.msg_id, told.msg_id, told.msg_id)
    assert exp.reason == f"{why}: Jev's nudge on {d.decision_id} was not delivered"
    closed = events.named("expectation.closed")
    assert [(e["expectation_id"], e["outcome"]) for e in closed] == [(exp.expectation_id, "escalated")]
    assert not Invocation.objects.filter(crow="Quill", trigger=told).exists()
