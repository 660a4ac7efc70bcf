"""Quill asks Boss for crows, and Boss runs the flock (docs/GOVERNANCE.md, "2. Quill asks
Boss for crows", "3. Boss runs the flock"): hatching with a starting trust (above regular
only on the owner's approval phrase), adding and removing nest members by order and over
the API, proposing idle crows' retirement and a top-up when a room's tokens run low, never
doing either on its own."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from flock.models import Crow, Event
from nests.actions import create_nest, post_message
from nests.actions.chat.idle import propose_idle_retirements
from nests.models import ChatRequest, Invocation, Nest, NestMessage
from nests.models.ledger import OrchestrationDecision
from nests.queries import trust_level
from nests.tasks_upkeep import schedule_idle_review
from tests.support.scripted_brain import ScriptedBrain, fake_jev, run_crows  # noqa: F401  (fake_jev: a fixture found here)
from trust.models import Decision

pytestmark = [pytest.mark.usefixtures("fake_jev")]


@pytest.fixture
def launch(db):
    """Hugin, Munin and Inky at the core; Quill and Boss serve it, as every room."""
    return create_nest("Launch", crows=["Hugin", "Munin", "Inky"])


def said(nest_id: str, author: str) -> list[NestMessage]:
    return list(NestMessage.objects.filter(nest__nest_id=nest_id, author=author).order_by("n"))


def post_json(client, path: str, body: object):
    return client.post(path, data=json.dumps(body), content_type="application/json")


# --- 2. Quill asks Boss for crows -------------------------------------------------------------


def test_i_need_a_crow_for_x_to_quill_becomes_an_order_boss_carries_out(launch, capture_events):
    asked = post_message("launch", author="owner", text="@Quill I need a crow for data cleaning")
    assert Invocation.objects.get(trigger=asked).crow == "Quill"
    with capture_events() as events:
        run_crows()
    order = said("launch", "Quill")[-1]
    # The order is said in the room, to Boss, on the owner's behalf: the owner sees it.
    assert (order.kind, order.to, order.refers_to) == ("request", "Boss", asked.msg_id)
    assert order.text == "@Boss, for @owner: hatch a crow named Wren for data cleaning"
    assert ChatRequest.objects.get(message=order).requester == "owner"
    answer = said("launch", "Boss")[-1]
    assert answer.to == "owner" and answer.refers_to == order.msg_id
    assert "Hatched @Wren the Fledgling: good at data cleaning" in answer.text
    assert Crow.objects.get(name="Wren").hatched_by == "Boss"
    assert events.named("crow.hatched")[0]["crow"] == "Wren"
    # Boss's pick of the model is scored, as every hatch is.
    assert OrchestrationDecision.objects.filter(kind="model", crow="Wren", decider="Boss").exists()


def test_an_unaddressed_need_goes_to_quill_and_keeps_the_name_the_owner_gave(launch):
    post_message("launch", author="owner", text="We need a crow named Pica who is good at spreadsheets")
    run_crows()
    assert said("launch", "Quill")[-1].text == "@Boss, for @owner: hatch a crow named Pica for spreadsheets"
    assert Crow.objects.filter(name="Pica").exists()


# --- 3. Boss runs the flock: hatching with a starting trust -----------------------------------


def test_boss_hatches_a_crow_starting_regular_for_the_task_type_named(launch, capture_events):
    with capture_events() as events:
        post_message("launch", author="owner", text="@Boss hatch Wren for data, starting regular")
        run_crows()
    assert trust_level("Wren", "data") == 1 and trust_level("Wren", "writing") == 0
    assert Crow.objects.get(name="Wren").task_types == ["data"]
    changed = events.named("trust.changed")
    assert [(c["holder"], c["task_type"], c["from"], c["to"], c["by"]) for c in changed] == [("Wren", "data", 0, 1, "Boss")]
    text = said("launch", "Boss")[-1].text
    assert "Trust starts at 1 (regular) for data" in text and "Jev scores the model pick" in text


def test_boss_refuses_trusted_without_the_owners_approval_phrase(launch, capture_events):
    with capture_events() as events:
        post_message("launch", author="owner", text="@Boss hatch Wren for data, starting trusted")
        run_crows()
    assert not Crow.objects.filter(name="Wren").exists()
    assert "crow.hatched" not in events.names()
    decision = Decision.objects.get(subject="hatch Wren")
    assert (decision.status, decision.phrase) == ("open", "yes, hatch Wren trusted")
    text = said("launch", "Boss")[-1].text
    assert "needs your approval phrase: say exactly “yes, hatch Wren trusted”" in text
    # Anything but the phrase is talk; the phrase hatches it, trusted for data.
    post_message("launch", author="owner", text="sure, go ahead")
    run_crows()
    assert not Crow.objects.filter(name="Wren").exists()
    post_message("launch", author="owner", text="Yes, hatch Wren trusted")
    decision.refresh_from_db()
    assert (decision.status, decision.outcome) == ("closed", "yes, hatch Wren trusted")
    assert trust_level("Wren", "data") == 2
    assert "Hatched @Wren" in said("launch", "Boss")[-1].text


def test_a_trusted_start_with_no_phrase_by_the_deadline_hatches_nothing(launch, settings):
    settings.CROWS_DECISION_TIMEOUT_S = 0
    post_message("launch", author="owner", text="@Boss hatch Wren for data, starting trusted")
    run_crows()
    assert Decision.objects.get(subject="hatch Wren").outcome == "timeout"
    assert not Crow.objects.filter(name="Wren").exists()
    assert "Wren is not hatched" in said("launch", "Boss")[-1].text


# --- 3. Boss runs the flock: members ------------------------------------------------------------


def test_boss_adds_and_removes_members_by_order(launch, capture_events):
    create_nest("Ops", crows=["Pepper"])
    with capture_events() as events:
        post_message("launch", author="owner", text="@Boss add Inky and Soot to #ops")
        run_crows()
    changed = events.named("nest.members_changed")
    assert [(c["nest_id"], c["crows"], c["added"], c["removed"], c["by"]) for c in changed] == [
        ("ops", ["Pepper", "Inky", "Soot"], ["Inky", "Soot"], [], "Boss"),
    ]
    assert "Done: added Inky, Soot to Ops (ops)" in said("launch", "Boss")[-1].text
    post_message("launch", author="owner", text="@Boss remove Munin from launch")
    run_crows()
    assert Nest.objects.get(nest_id="launch").core == ["Hugin", "Inky"]


@pytest.mark.parametrize(
    "order, answer",
    [
        ("@Boss add Gravel to #launch", "Can't do that: not crows of the roster: Gravel"),
        ("@Boss add Pepper to #nowhere", "Can't do that: there is no nest called “nowhere”"),
        ("@Boss remove Pepper from launch", "Can't do that: not members of launch: Pepper"),
    ],
)
def test_a_member_order_boss_cannot_carry_out_is_answered(launch, order, answer):
    post_message("launch", author="owner", text=order)
    run_crows()
    assert answer in said("launch", "Boss")[-1].text
    assert not Event.objects.filter(name="nest.members_changed").exists()
    assert Nest.objects.get(nest_id="launch").core == ["Hugin", "Munin", "Inky"]


def test_the_owner_changes_members_over_the_api(launch, client, capture_events):
    with capture_events() as events:
        response = post_json(client, "/api/nests/launch/members", {"add": ["pepper"], "remove": ["Munin"]})
    assert response.status_code == 200, response.content
    assert response.json() == {"nest_id": "launch", "crows": ["Hugin", "Inky", "Pepper"], "added": ["Pepper"], "removed": ["Munin"]}
    [changed] = events.named("nest.members_changed")
    assert (changed["added"], changed["removed"], changed["by"]) == (["Pepper"], ["Munin"], "owner")


@pytest.mark.parametrize(
    "path, body, status, words",
    [
        ("/api/nests/launch/members", {"add": ["Gravel", "Zed"]}, 400, "not crows of the roster: Gravel, Zed"),
        ("/api/nests/nowhere/members", {"add": ["Pepper"]}, 404, "nowhere"),
        ("/api/nests/launch/members", {"add": []}, 400, "add, when given, names at least one crow"),
        ("/api/nests/nowhere/members", {"add": []}, 404, "nowhere"),
        ("/api/nests/launch/members", {"add": ["Hugin"]}, 400, "already members of launch: Hugin"),
        ("/api/nests/launch/members", {"add": ["Pepper"], "remove": ["Pepper"]}, 400, "added and removed at once"),
        ("/api/nests/launch/members", {"remove": ["Hugin", "Munin", "Inky"]}, 400, "would have 0 core crows"),
        ("/api/nests/launch/members", {"add": "Pepper"}, 400, "add must be a list of crow names"),
        ("/api/nests/launch/members", {"adds": ["Pepper"]}, 400, "adds"),
        ("/api/nests/dm-hugin/members", {"add": ["Pepper"]}, 400, "direct chat"),
    ],
)
def test_a_bad_member_change_is_refused_whole(launch, client, capture_events, path, body, status, words):
    if "dm-" in path:
        post_message("dm-hugin", author="owner", text="hi")  # the direct chat's row is made on first use
    with capture_events() as events:
        response = post_json(client, path, body)
    assert response.status_code == status, response.content
    assert words in response.json()["message"]
    assert "nest.members_changed" not in events.names()
    assert Nest.objects.get(nest_id="launch").core == ["Hugin", "Munin", "Inky"]


# --- 3. Boss runs the flock: idle crows and budgets ----------------------------------------------


def test_idle_crows_are_proposed_for_retirement_never_retired(launch, settings, client):
    settings.CROWS_IDLE_RETIRE_DAYS = 3
    post_message("launch", author="Hugin", text="Still here.")
    later = timezone.now() + timedelta(days=2)
    assert propose_idle_retirements(now=later) == []
    much_later = timezone.now() + timedelta(days=5)
    opened = propose_idle_retirements(now=much_later)
    idle = {d.crow for d in opened}
    assert "Soot" in idle and "Quill" not in idle and "Boss" not in idle
    assert all(Crow.objects.get(name=name).status == "active" for name in idle)
    soot = next(d for d in opened if d.crow == "Soot")
    assert (soot.phrase, soot.nest_id) == ("yes, retire Soot", "todo")
    announcement = NestMessage.objects.get(msg_id=soot.msg_id)
    assert announcement.author == "Boss" and "I retire nobody on my own" in announcement.text
    # Asked again, nothing is proposed twice.
    assert propose_idle_retirements(now=much_later) == []
    # Anything but the phrase keeps it; the phrase retires it.
    response = post_json(client, f"/api/decisions/{soot.decision_id}", {"answer": "yes, retire Soot"})
    assert response.status_code == 200
    assert Crow.objects.get(name="Soot").status == "retired"
    rook = next(d for d in opened if d.crow == "Rook")
    assert post_json(client, f"/api/decisions/{rook.decision_id}", {"answer": "keep it"}).status_code == 200
    assert Crow.objects.get(name="Rook").status == "active"


def test_the_daily_idle_review_is_off_by_default_and_queued_once(db, settings):
    settings.CROWS_IDLE_RETIRE_DAYS = 0
    assert schedule_idle_review() is False
    assert propose_idle_retirements(now=timezone.now() + timedelta(days=400)) == []
    settings.CROWS_IDLE_RETIRE_DAYS = 7
    assert schedule_idle_review() is True
    assert schedule_idle_review() is False


def test_a_room_running_low_gets_one_top_up_proposal(launch, settings, monkeypatch):
    settings.CROWS_NEST_TOKEN_BUDGET = 4000
    # One crow's call spends 3,700 of the room's 4,000 tokens: a tenth or less is left.
    brain = ScriptedBrain(lambda request: "Here is my answer.", tokens=1850)
    monkeypatch.setattr("nests.actions.chat.crows.get_brain", lambda spec="": brain)
    post_message("launch", author="owner", text="@Hugin say something")
    run_crows()
    proposals = [m for m in said("launch", "Boss") if "nearly spent" in m.text]
    assert len(proposals) == 1 and "say exactly “yes, top up launch”" in proposals[0].text
    decision = Decision.objects.get(subject__startswith="top-up launch")
    assert (decision.status, decision.msg_id, decision.phrase) == ("open", proposals[0].msg_id, "yes, top up launch")
    # Once: more talk in the low room proposes nothing new.
    post_message("launch", author="owner", text="ok, thanks")
    post_message("launch", author="Munin", text="Noted.")
    assert len([m for m in said("launch", "Boss") if "nearly spent" in m.text]) == 1
    post_message("launch", author="owner", text="yes, top up launch")
    decision.refresh_from_db()
    assert decision.outcome == "yes, top up launch"
    assert "The owner topped up this room: +2,000 tokens" in said("launch", "harness")[-1].text
