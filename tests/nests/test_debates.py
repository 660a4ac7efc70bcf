"""Debate mode (docs/GOVERNANCE.md), offline with the mock brain and the real Jev: Boss
moderates two crows over two rounds to both final positions and the judge's call; a crow
speaking out of turn is nudged, not counted."""

from __future__ import annotations

import re

import pytest

from nests.actions import create_nest, post_message
from nests.models import Debate, Expectation, NestMessage
from tests.support.scripted_brain import run_crows

ORDER = "@Hugin and @Munin, debate this: should we rewrite the billing service in Go or keep Python? Two rounds, take turns."


@pytest.fixture
def arena(db):
    return create_nest("Arena", crows=["Hugin", "Munin", "Pepper"])


def test_two_crows_debate_two_rounds_to_final_positions_and_a_verdict(arena, capture_events, client):
    with capture_events() as events:
        asked = post_message("arena", author="owner", text=ORDER)
        run_crows()
    debate = Debate.objects.get()
    assert (debate.status, debate.phase, debate.rounds, debate.round) == ("finished", "done", 2, 2)
    assert debate.crows == ["Hugin", "Munin"] and debate.judge == "Pepper" and debate.turn_order
    assert debate.stances == {"Hugin": "for Go", "Munin": "for keep Python"}
    argued = [(t["round"], t["crow"]) for t in debate.turns if t["round"]]
    assert argued == [(1, "Hugin"), (1, "Munin"), (2, "Hugin"), (2, "Munin")]
    assert set(debate.finals) == {"Hugin", "Munin"}
    assert all(text.startswith("Final position:") for text in debate.finals.values())
    assert debate.verdict.startswith("Verdict:") and debate.winner in ("Hugin", "Munin")
    # Round 2 answers the other side's point, quoting it.
    round2 = [t for t in debate.turns if t["round"] == 2]
    assert "Munin says “" in round2[0]["text"] and "Hugin says “" in round2[1]["text"]
    kickoff = NestMessage.objects.get(msg_id=debate.kickoff_msg_id)
    assert kickoff.author == "Boss" and kickoff.refers_to == asked.msg_id
    for words in ("Question:", "Stances:", "Judge: @Pepper", "Rules:", "Rounds: 2", "Final position:"):
        assert words in kickoff.text
    assert events.names().count("debate.started") == 1
    rounds = [(p["round"], p["status"]) for p in events.named("debate.round")]
    assert rounds == [(1, "open"), (1, "completed"), (2, "open"), (2, "completed")]
    finished = events.named("debate.finished")
    assert len(finished) == 1 and finished[0]["winner"] == debate.winner and set(finished[0]["finals"]) == {"Hugin", "Munin"}
    started = events.named("debate.started")[0]
    assert {"debate_id", "nest_id", "question", "moderator", "crows", "stances", "judge", "rounds", "turn_order", "ts"} <= set(started)
    assert {"debate_id", "round", "rounds", "status", "speakers", "turns", "nest_id", "ts"} == set(events.named("debate.round")[1])
    # Every turn's expectation was met, and the moderator's plan completed.
    assert set(Expectation.objects.filter(debate=debate).values_list("status", flat=True)) == {"met"}
    assert Expectation.objects.filter(debate=debate, check_name="rounds_completed").count() == 1
    body = client.get("/api/nests/arena/debates").json()
    assert body["nest_id"] == "arena" and body["debates"][0]["verdict"] == debate.verdict
    assert len(body["debates"][0]["turns"]) == 6


def test_an_out_of_turn_post_is_nudged_not_counted(arena):
    post_message("arena", author="owner", text=ORDER)
    # Run only Boss: the kickoff and the first cue (Hugin's turn).
    from flock import worker

    while not Debate.objects.filter(cued="Hugin").exists():
        assert worker.run_pending(max_tasks=1) == 1
    early = post_message("arena", author="Munin", text="Go is obviously wrong, trust me.")
    nudge = NestMessage.objects.get(kind="nudge")
    assert (nudge.author, nudge.to, nudge.refers_to) == ("harness", "Munin", early.msg_id)
    assert re.match(rf"^\[NUDGE {early.msg_id}\] \[nudge 1/3\] Deadline \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z: @Munin", nudge.text)
    run_crows()
    debate = Debate.objects.get()
    assert debate.status == "finished"
    assert early.msg_id not in [t["msg_id"] for t in debate.turns]
    assert [(t["round"], t["crow"]) for t in debate.turns if t["round"]][:2] == [(1, "Hugin"), (1, "Munin")]
    # The offender's turn-order expectation closed when the debate did.
    exp = Expectation.objects.get(message=early)
    assert (exp.check_name, exp.nudges, exp.status) == ("turn_order", 1, "met")


def test_the_answer_to_an_out_of_turn_nudge_is_not_taken_for_the_crows_turn(arena):
    """A slow brain answers its nudge after the moderator has cued it: that answer is not
    its turn; its answer to the cue is."""
    from flock import worker
    from nests.models import Invocation

    post_message("arena", author="owner", text=ORDER)
    while not Debate.objects.filter(cued="Hugin").exists():
        assert worker.run_pending(max_tasks=1) == 1
    post_message("arena", author="Munin", text="Go is obviously wrong, trust me.")
    nudged = Invocation.objects.get(crow="Munin", reason="nudge")
    # Hugin's turn, then Boss's cue to Munin, before Munin's nudge is answered.
    while not Debate.objects.filter(cued="Munin").exists():
        assert worker.run_pending(max_tasks=1) == 1
    assert Invocation.objects.get(pk=nudged.pk).status == "queued"
    run_crows()
    debate = Debate.objects.get()
    assert debate.status == "finished"
    munin_turns = [t["msg_id"] for t in debate.turns if t["crow"] == "Munin" and t["round"]]
    reasons = {Invocation.objects.get(reply__msg_id=m).reason for m in munin_turns}
    assert reasons == {"debate"}, reasons


def test_a_debate_needs_two_crows(db):
    create_nest("Solo", crows=["Hugin"])
    post_message("solo", author="owner", text="debate this: tabs or spaces?")
    run_crows()
    assert not Debate.objects.exists()
    reply = NestMessage.objects.filter(nest__nest_id="solo", author="Boss").last()
    assert reply is not None and "two crows" in reply.text


def test_the_debate_events_are_listed_in_the_capabilities(client, db):
    capabilities = set(client.get("/api/state").json()["capabilities"])
    assert {"debate.started", "debate.round", "debate.finished"} <= capabilities


@pytest.mark.parametrize(
    "order, question, crows, judge, rounds",
    [
        ("I want a debate between Hugin and Munin on whether we should raise prices",
         "whether we should raise prices", ["Hugin", "Munin"], "Pepper", 2),
        ("have Munin and Hugin debate whether we ship Friday or Monday, Pepper judging, three rounds",
         "whether we ship Friday or Monday", ["Munin", "Hugin"], "Pepper", 3),
        ("have them argue: is a monorepo better than many repos?", "is a monorepo better than many repos?",
         ["Hugin", "Munin"], "Pepper", 2),
        ("@Boss debate this: tabs or spaces? @Hugin and @Munin argue, Pepper judges, two rounds",
         "tabs or spaces?", ["Hugin", "Munin"], "Pepper", 2),
    ],
)
def test_the_owner_order_is_read_for_crows_judge_rounds_and_question(arena, order, question, crows, judge, rounds):
    post_message("arena", author="owner", text=order)
    run_crows()
    debate = Debate.objects.get()
    assert (debate.question, debate.crows, debate.judge, debate.rounds) == (question, crows, judge, rounds)
    assert debate.status == "finished"


@pytest.mark.parametrize(
    "question, stances",
    [
        ("tea or coffee for the team?", ["for tea", "for coffee"]),
        ("spreadsheets or a database?", ["for spreadsheets", "for a database"]),
        ("should we rewrite the billing service in Go or keep Python?", ["for Go", "for keep Python"]),
        ("should we ship now or not?", ["for", "against"]),
        ("is remote work good for us", ["for", "against"]),
    ],
)
def test_an_x_or_y_question_gives_each_side_an_option(question, stances):
    from nests.actions.chat.debates import _stances

    assert _stances(question, 2) == stances


def _until_cued(crow: str) -> Debate:
    from flock import worker

    while not Debate.objects.filter(cued=crow).exists():
        assert worker.run_pending(max_tasks=1) == 1
    return Debate.objects.get(cued=crow)


def test_the_owner_stops_a_running_debate_and_nobody_owes_it_anything(arena, capture_events):
    post_message("arena", author="owner", text=ORDER)
    debate = _until_cued("Hugin")
    with capture_events() as events:
        stop = post_message("arena", author="owner", text="@Boss stop the debate, I've heard enough")
        run_crows()
    debate.refresh_from_db()
    assert (debate.status, debate.phase, debate.cued) == ("stopped", "done", "")
    (finished,) = events.named("debate.finished")
    assert (finished["status"], finished["reason"], finished["by"]) == ("stopped", "the owner stopped it", "owner")
    said = NestMessage.objects.get(refers_to=stop.msg_id, author="Boss")
    assert f"Debate {debate.debate_id} is stopped" in said.text and said.to == "owner"
    assert not Expectation.objects.filter(debate=debate, status__in=Expectation.LIVE).exists()
    # Nothing more is cued or nudged, and a new debate may start.
    assert not NestMessage.objects.filter(kind="nudge").exists()
    post_message("arena", author="owner", text=ORDER)
    run_crows()
    assert list(Debate.objects.order_by("id").values_list("status", flat=True)) == ["stopped", "finished"]


def test_stop_with_no_debate_running_is_just_a_message(arena):
    post_message("arena", author="owner", text="@Boss stop the debate")
    run_crows()
    assert not Debate.objects.exists()


@pytest.mark.parametrize("how", ["quarantined", "retired", "left the room"])
def test_a_debater_who_can_no_longer_speak_stops_the_debate_and_nobody_else_is_blamed(arena, capture_events, how):
    from flock.actions import retire_crow
    from nests.actions.members import remove_nest_member
    from trust.actions import quarantine_crow

    post_message("arena", author="owner", text=ORDER)
    debate = _until_cued("Hugin")  # Hugin owes its turn
    with capture_events() as events:
        if how == "quarantined":
            quarantine_crow("Hugin", breach="owner_report", evidence="by hand", by="admin:smokey")
        elif how == "retired":
            retire_crow("Hugin", retired_by="owner")
        else:
            remove_nest_member("arena", "Hugin", by="owner")
    debate.refresh_from_db()
    assert debate.status == "stopped"
    (finished,) = events.named("debate.finished")
    assert finished["reason"] == f"Hugin, a debater, {'was ' if how != 'left the room' else ''}{how}"
    said = NestMessage.objects.filter(nest=arena).order_by("-n").first()
    assert (said.author, said.to) == ("Boss", "owner") and "is stopped" in said.text
    closed = dict(Expectation.objects.filter(debate=debate).values_list("crow", "status"))
    # Only a quarantined crow's owed turn goes to the owner as not kept.
    assert closed == {"Boss": "met", "Hugin": "escalated" if how == "quarantined" else "met"}
    run_crows()  # Hugin's queued turn, if it still runs, lands on a stopped debate
    assert Debate.objects.get().turns == [] and not NestMessage.objects.filter(kind="nudge").exists()


@pytest.mark.parametrize("text", ["@Boss stop the debate about Go, please", "end the debate on billing now"])
def test_stop_the_debate_about_something_stops_it_and_starts_none(arena, text):
    post_message("arena", author="owner", text=ORDER)
    _until_cued("Hugin")
    post_message("arena", author="owner", text=text)
    run_crows()
    assert list(Debate.objects.values_list("status", flat=True)) == ["stopped"]


def test_dont_stop_the_debate_is_not_a_stop(arena):
    post_message("arena", author="owner", text=ORDER)
    _until_cued("Hugin")
    post_message("arena", author="owner", text="don't stop the debate yet, this is good")
    run_crows()
    assert Debate.objects.get().status == "finished"


def test_the_moderator_quarantined_stops_its_debate_and_the_harness_says_so(arena):
    from trust.actions import quarantine_crow

    post_message("arena", author="owner", text=ORDER)
    debate = _until_cued("Hugin")
    quarantine_crow("Boss", breach="owner_report", evidence="by hand", by="admin:smokey")
    debate.refresh_from_db()
    assert debate.status == "stopped"
    said = NestMessage.objects.filter(nest=arena).order_by("-n").first()
    assert said.author == "harness" and "Boss, the moderator, was quarantined" in said.text


def test_the_owners_question_to_a_cued_debater_gets_its_own_answer_not_its_turn(arena):
    from flock import worker
    from nests.models import Invocation

    post_message("arena", author="owner", text=ORDER)
    debate = _until_cued("Hugin")
    asked = post_message("arena", author="owner", text="@Hugin quick, what is your view on remote work?")
    run_crows()
    answer = Invocation.objects.get(trigger=asked).reply
    debate.refresh_from_db()
    assert debate.status == "finished"
    assert answer is not None and answer.msg_id not in [t["msg_id"] for t in debate.turns]
    hugin_turns = [t["msg_id"] for t in debate.turns if t["crow"] == "Hugin" and t["round"]]
    assert {Invocation.objects.get(reply__msg_id=m).reason for m in hugin_turns} == {"debate"}
    assert worker.run_pending() == 0


def test_every_turn_is_stored_as_talk_addressed_to_the_moderator(arena):
    post_message("arena", author="owner", text=ORDER)
    run_crows()
    debate = Debate.objects.get()
    turns = [t["msg_id"] for t in debate.turns] + [debate.verdict_msg_id]
    stored = {m.msg_id: (m.kind, m.to) for m in NestMessage.objects.filter(msg_id__in=turns)}
    assert len(stored) == len(turns) == 7
    assert set(stored.values()) == {("say", "Boss")}
