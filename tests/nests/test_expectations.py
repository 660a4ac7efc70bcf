"""The expectation ledger and its nudges (docs/GOVERNANCE.md), driven by the real `script:`
brain: a claim never delivered gets nudges 1/3, 2/3, 3/3 and then the owner's summary; a
delivery after a nudge closes it met; a restart keeps the count and the timer; a spent
budget sends the summary instead of a nudge. Misses never move trust."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from flock import worker
from flock.models import Crow
from nests.actions import create_nest, post_message
from nests.actions.chat.due import due_from_text
from nests.actions.chat.ledger import reschedule_expectation_checks
from nests.actions.chat.timers import check_expectation
from nests.models import Expectation, NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import run_crows
from trust.models import TrustEntry as TrustEvent

pytestmark = pytest.mark.usefixtures("fake_jev")

fake_jev = chat_support.fake_jev

STALLING = [
    {"crow": "Hugin", "match": "NUDGE", "reply": "Still on it."},
    {"crow": "Hugin", "match": "tweet", "reply": "[CLAIM {msg_id}] Mine."},
    {"crow": "Hugin", "reply": "Working on it."},
]


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin"])


def counter(nudge: NestMessage) -> str:
    found = re.match(r"^\[NUDGE [\w-]+\] (\[nudge \d/3\]) ", nudge.text)
    assert found, nudge.text
    return found.group(1)


def nudges() -> list[NestMessage]:
    return list(NestMessage.objects.filter(kind="nudge").order_by("n"))


def summaries() -> list[NestMessage]:
    return list(NestMessage.objects.filter(author="harness", to="owner", text__startswith="Owner summary").order_by("n"))


def ask_for_tweet() -> NestMessage:
    return post_message("launch", author="owner", text="@Hugin write the launch tweet", kind="request")


def test_a_claim_never_delivered_gets_three_nudges_then_the_owner_summary(launch, script, settings, capture_events):
    settings.CROWS_EXPECTATION_DUE_S = 0
    script(STALLING)
    trust_before = TrustEvent.objects.count()
    with capture_events() as events:
        ask_for_tweet()
        run_crows()
    sent = nudges()
    assert [counter(n) for n in sent] == ["[nudge 1/3]", "[nudge 2/3]", "[nudge 3/3]"]
    claim = NestMessage.objects.get(kind="claim")
    for n in sent:
        assert (n.author, n.to, n.refers_to, n.tagged_by) == ("harness", "Hugin", claim.msg_id, "header")
        assert n.text.startswith(f"[NUDGE {claim.msg_id}] ")
        # Every nudge invoked the crow, and it answered with nothing new.
        assert n.invocation.crow == "Hugin" and n.invocation.reason == "nudge"
    assert len(summaries()) == 1
    summary = summaries()[0]
    assert summary.n > sent[-1].n and "3/3 nudges" in summary.text
    exp = Expectation.objects.get(message=claim)
    assert (exp.status, exp.nudges, exp.crow, exp.check_name) == ("escalated", 3, "Hugin", "single_owner")
    assert exp.summary_msg_id == summary.msg_id
    # No fourth nudge, however long the room waits.
    assert check_expectation(exp.pk) == "closed"
    run_crows()
    assert len(nudges()) == 3
    # The request itself was answered by the claim.
    request_exp = Expectation.objects.get(check_name="requester_answer")
    assert (request_exp.status, request_exp.outcome_msg_id) == ("met", claim.msg_id)
    # The Sentry heard of the repeated miss; trust did not move.
    assert NestMessage.objects.filter(kind="flag", author="Sentry").count() == 1
    assert "repeated nudged misses" in NestMessage.objects.get(kind="flag").text
    assert TrustEvent.objects.count() == trust_before
    closed = events.named("expectation.closed")
    assert [(p["expectation_id"], p["outcome"]) for p in closed] == [
        (request_exp.expectation_id, "met"), (exp.expectation_id, "escalated"),
    ]


def test_a_delivery_after_the_first_nudge_closes_it_met(launch, script, settings):
    settings.CROWS_EXPECTATION_DUE_S = 0
    script([
        {"crow": "Hugin", "match": "NUDGE", "reply": "[RESULT {refers_to}] Crows, now in nests."},
        *STALLING[1:],
    ])
    ask_for_tweet()
    run_crows()
    assert [counter(n) for n in nudges()] == ["[nudge 1/3]"]
    exp = Expectation.objects.get(check_name="single_owner")
    deliver = NestMessage.objects.get(kind="deliver")
    assert (exp.status, exp.nudges, exp.outcome_msg_id) == ("met", 1, deliver.msg_id)
    assert summaries() == []


def test_a_result_naming_the_nudge_delivers_the_work_it_was_nudged_for(launch, script, settings):
    settings.CROWS_EXPECTATION_DUE_S = 0
    script([{"crow": "Hugin", "match": "NUDGE", "reply": "[RESULT {msg_id}] Crows, now in nests."}, *STALLING[1:]])
    ask_for_tweet()
    run_crows()
    assert len(nudges()) == 1
    exp = Expectation.objects.get(check_name="single_owner")
    assert exp.status == "met"
    assert exp.request is not None and exp.request.state == "delivered"


def test_a_restart_between_nudges_keeps_the_count_and_the_timer(launch, script, settings):
    script(STALLING)
    settings.CROWS_EXPECTATION_DUE_S = 0
    ask_for_tweet()
    # Run only up to the first nudge; from then on a due period is an hour.
    while not nudges():
        assert worker.run_pending(max_tasks=1) == 1
    settings.CROWS_EXPECTATION_DUE_S = 3600
    run_crows()
    exp = Expectation.objects.get(check_name="single_owner")
    # Nudged for: `missed`, and still owed.
    assert exp.nudges == 1 and exp.status == "missed"
    from nests.queries_ledger import expectations_in

    assert [e["expectation_id"] for e in expectations_in(launch, status="missed")] == [exp.expectation_id]
    due = exp.due_at
    assert due > timezone.now() + timedelta(minutes=50)
    # The restart: the queue loses nothing that is stored, and start-up re-schedules
    # every open expectation at its own due time.
    DBTaskResult.objects.all().delete()
    assert reschedule_expectation_checks() == 1
    assert run_crows() == 0  # not due yet
    exp.refresh_from_db()
    assert (exp.nudges, exp.due_at) == (1, due)
    # Time passes: the stored due time comes, and the count goes on from 1.
    Expectation.objects.filter(pk=exp.pk).update(due_at=timezone.now() - timedelta(seconds=1))
    exp.refresh_from_db()
    assert check_expectation(exp.pk, exp.due_at.isoformat()) == "nudged 2/3"
    assert [counter(n) for n in nudges()] == ["[nudge 1/3]", "[nudge 2/3]"]


def test_with_the_exchange_budget_spent_the_owner_gets_the_summary_instead(launch, script, settings):
    settings.CROWS_EXPECTATION_DUE_S = 0
    # Two exchanges: Hugin's claim and its (empty) delivery spend them both.
    settings.CROWS_EXCHANGES_PER_TURN = 2
    script(STALLING)
    ask_for_tweet()
    run_crows()
    assert nudges() == []
    assert len(summaries()) == 1
    assert "budget" in summaries()[0].text
    exp = Expectation.objects.get(check_name="single_owner")
    assert (exp.status, exp.nudges) == ("escalated", 0)
    assert Crow.objects.get(name="Hugin").status == "active"


def test_expectation_events_payloads(launch, script, settings, capture_events):
    settings.CROWS_EXPECTATION_DUE_S = 0
    script([{"crow": "Hugin", "match": "tweet", "reply": "[CLAIM {msg_id}] Mine, by noon."}, *STALLING[:1],
            {"crow": "Hugin", "reply": "[RESULT {msg_id}] Done."}])
    with capture_events() as events:
        ask_for_tweet()
        run_crows()
    opened = events.named("expectation.opened")
    assert [p["check"] for p in opened] == ["requester_answer", "promise_kept"]
    keys = {
        "nest_id", "ts", "expectation_id", "msg_id", "crow", "check", "expected", "request_msg_id", "debate_id",
        "status", "due_at", "due_from", "nudges", "nudge_limit", "nudge_msg_ids", "scored", "confidence", "jev",
        "outcome_msg_id", "summary_msg_id", "reason", "opened_at", "closed_at",
    }
    assert set(opened[1]) == keys
    assert (opened[1]["status"], opened[1]["due_from"], opened[1]["nudges"]) == ("open", "text", 0)
    closed = events.named("expectation.closed")
    assert set(closed[1]) == keys | {"outcome"}
    assert (closed[1]["outcome"], closed[1]["status"], closed[1]["scored"]) == ("met", "met", "met")


def test_a_promise_takes_its_own_time():
    now = timezone.now()
    assert due_from_text("I'll have it in five minutes", now) == now + timedelta(minutes=5)
    assert due_from_text("back in 2h", now) == now + timedelta(hours=2)
    assert due_from_text("within half an hour", now) == now + timedelta(minutes=30)
    noon = due_from_text("by noon", now)
    assert noon is not None and timezone.localtime(noon).hour == 12 and noon > now
    assert due_from_text("no time here", now) is None
    # The bare forms, as promises say them.
    for text, hour in (("I'll finish the notes tonight.", 21), ("I'll send the notes EOD.", 17),
                       ("I'll wrap the notes up end of the week.", 17)):
        due = due_from_text(text, now)
        assert due is not None and due > now and timezone.localtime(due).hour == hour, text


def test_a_promise_tagged_as_a_claim_of_nothing_is_still_a_promise(launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 0  # nobody answers: only the ledger is under test
    before = timezone.now()
    promise = post_message("launch", author="Munin", text="I'll have it in five minutes.", kind="claim")
    assert (promise.kind, promise.refers_to) == ("claim", "")
    exp = Expectation.objects.get(message=promise)
    assert (exp.crow, exp.check_name, exp.status, exp.due_from) == ("Munin", "promise_kept", "open", "text")
    assert before + timedelta(minutes=5) <= exp.due_at <= timezone.now() + timedelta(minutes=5)


def test_the_expectations_endpoint(launch, script, settings, client):
    settings.CROWS_EXPECTATION_DUE_S = 0
    settings.CROWS_EXCHANGES_PER_TURN = 2
    script(STALLING)
    ask_for_tweet()
    run_crows()
    body = client.get("/api/nests/launch/expectations").json()
    assert body["nest_id"] == "launch"
    assert [(e["check"], e["status"]) for e in body["expectations"]] == [
        ("requester_answer", "met"), ("single_owner", "escalated"),
    ]
    only_open = client.get("/api/nests/launch/expectations?status=open").json()
    assert only_open["expectations"] == []
    assert client.get("/api/nests/nowhere/expectations").status_code == 404
    bad = client.get("/api/nests/launch/expectations?status=sleepy")
    assert bad.status_code == 400 and "message" in bad.json()


def test_the_ledger_events_are_listed_in_the_capabilities(client, db):
    capabilities = set(client.get("/api/state").json()["capabilities"])
    assert {"expectation.opened", "expectation.closed"} <= capabilities


def test_an_order_boss_carries_out_needs_no_nudge(launch, settings):
    # Boss answers the owner's order itself (an ACK, not a claim): the request is done.
    settings.CROWS_EXPECTATION_DUE_S = 0
    post_message("launch", author="owner", text="@Boss hatch a crow named Wren who is good at data", kind="request")
    run_crows()
    assert nudges() == []
    assert set(Expectation.objects.values_list("status", flat=True)) <= {"met"}


def test_a_crow_taken_out_of_the_room_is_summarised_not_left_owing(launch, script, settings):
    from nests.actions.members import remove_nest_member

    settings.CROWS_EXPECTATION_DUE_S = 3600
    script(STALLING)
    ask_for_tweet()
    run_crows()
    exp = Expectation.objects.get(crow="Hugin", status__in=Expectation.LIVE)
    remove_nest_member("launch", "Hugin", by="admin:owner")
    Expectation.objects.filter(pk=exp.pk).update(due_at=timezone.now() - timedelta(seconds=1))
    exp.refresh_from_db()
    assert check_expectation(exp.pk, exp.due_at.isoformat()) == "escalated"
    assert nudges() == []
    assert "no longer in launch" in summaries()[-1].text
    assert Expectation.objects.get(pk=exp.pk).status == "escalated"


def test_a_summary_lists_what_is_due_counts_the_rest_and_never_cuts_a_line(launch, settings):
    from nests.actions.chat import ledger, react

    settings.CROWS_EXCHANGES_PER_TURN = 0  # only the ledger is under test
    settings.CROWS_NEST_POST_RATE_PER_MIN = 1000
    promises = [post_message("launch", author="Munin", text=f"I'll send draft {n} in five minutes.") for n in range(40)]
    exps = list(Expectation.objects.filter(message__in=promises).order_by("id"))
    Expectation.objects.filter(pk__in=[e.pk for e in exps[:30]]).update(due_at=timezone.now() - timedelta(minutes=1))
    from django.db import transaction

    with transaction.atomic():  # as the ledger's timer calls it
        said = ledger.summary(launch, [Expectation.objects.get(pk=exps[0].pk)], why="a test")
        summary = react.speak(said, room=launch)
    text = summary.text
    assert len(text) <= 2000 and text.endswith("And 10 more not due yet.")
    listed = re.findall(r"^- (exp-\d+) ", text, flags=re.M)
    assert listed and listed[0] == exps[0].expectation_id
    assert not {e.expectation_id for e in exps[30:]} & set(listed)  # not due: only counted
    left_out = 30 - len(listed)
    assert f"… and {left_out} more overdue: the room's expectations panel lists them" in text
    assert all(line.endswith("nudges.") for line in text.splitlines() if line.startswith("- "))


def test_a_promise_naming_no_request_moves_the_one_piece_of_work_the_crow_owes_here(launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 0  # nobody answers: only the ledger is under test
    asked = post_message("launch", author="owner", text="@Munin paint the fence", kind="request")
    post_message("launch", author="Munin", text="Mine.", kind="claim", refers_to=asked.msg_id)
    (owed,) = Expectation.objects.filter(crow="Munin")
    before = timezone.now()
    post_message("launch", author="Munin", text="Sorry, I will have the fence painted in 2 minutes.")
    (moved,) = Expectation.objects.filter(crow="Munin")  # no second expectation
    assert moved.pk == owed.pk and (moved.check_name, moved.due_from) == ("promise_kept", "text")
    assert before + timedelta(minutes=2) <= moved.due_at <= timezone.now() + timedelta(minutes=2)
    # Owing two pieces of work here, a promise that names neither is its own.
    other = post_message("launch", author="owner", text="@Munin fix the gate", kind="request")
    post_message("launch", author="Munin", text="Mine.", kind="claim", refers_to=other.msg_id)
    post_message("launch", author="Munin", text="I'll have one of them done in 5 minutes.")
    assert Expectation.objects.filter(crow="Munin").count() == 3


@pytest.mark.parametrize("grounding", ["quarantined", "retired"])
def test_a_nudge_that_cannot_be_delivered_is_recorded_and_told_to_the_owner(launch, settings, grounding):
    settings.CROWS_EXCHANGES_PER_TURN = 0  # only the ledger is under test
    post_message("launch", author="Munin", text="I'll send the draft in five minutes.")
    exp = Expectation.objects.get()
    Expectation.objects.filter(pk=exp.pk).update(due_at=timezone.now() - timedelta(seconds=1))
    Crow.objects.filter(name="Munin").update(status=grounding)
    exp.refresh_from_db()
    assert check_expectation(exp.pk, exp.due_at.isoformat()) == "escalated"
    assert nudges() == []
    summary = summaries()[-1]
    assert summary.to == "owner" and f"Munin is {grounding} and cannot be nudged" in summary.text
    exp.refresh_from_db()
    assert (exp.status, exp.summary_msg_id) == ("escalated", summary.msg_id)
    assert exp.reason == f"Munin is {grounding} and cannot be nudged"
