"""The chat core's reactors, each called directly (docs/CHATROOM.md, "The chat core"): a room
and a stored message in, the effects it asks for out. No server, no worker, no post: the
message is said with the leaf `say`, and the reactor's answer is read, not applied."""

from __future__ import annotations

import logging

import pytest
from django.db import transaction

from flock.events import lock_event_log
from flock.models import Crow
from flock.vocab import HARNESS, OWNER, SENTRY, MessageKind
from nests.actions import create_nest
from nests.actions.chat import (
    debates,
    decision_phrase,
    dispatch,
    expectations,
    orchestration,
    react,
    sentry,
    silent,
    work,
)
from nests.actions.chat.effects import NOTHING, Effects, Invoke, Posted, Say
from nests.actions.chat.room import say
from nests.models import ChatRequest, Debate, Expectation, Invocation, NestMessage
from tests.support import scripted_brain as chat_support

pytestmark = pytest.mark.usefixtures("fake_jev")
fake_jev = chat_support.fake_jev


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin", "Pepper"])


def posted(room, author: str, text: str, kind: str = MessageKind.SAY, to: str = "", refers_to: str = "", **kw) -> Posted:
    message = say(room, author=author, text=text, kind=kind, to=to, refers_to=refers_to)
    crow = Crow.objects.filter(name=author).first() if author not in (OWNER, HARNESS, SENTRY) else None
    return Posted(room=room, message=message, crow=crow, **kw)


def run(reactor, post: Posted) -> Effects:
    """The reactor in a transaction of its own, as it runs in the post's."""
    with transaction.atomic():
        lock_event_log()
        return reactor(post)


def test_the_loop_runs_the_reactors_in_the_written_down_order():
    assert [name for name, _ in react.REACTORS] == [
        "sentry", "decision phrase", "ask owner", "work", "dispatch", "expectations", "jev judges",
        "delivery checks", "debates", "orchestration", "budget watch", "quarantine notice", "not a participant",
    ]


def test_sentry_flags_a_breach_and_stands_the_rest_down(launch):
    finding = sentry.Finding(kind="redo", score=1.0, evidence="Hugin redid Munin's work.")
    post = posted(launch, "Hugin", "[RESULT launch-1] done", finding=finding)
    effects = run(sentry.react, post)
    assert effects.done
    [flag] = effects.say
    assert (flag.author, flag.kind, flag.to, flag.refers_to) == (SENTRY, "flag", OWNER, post.message.msg_id)
    assert "Breach by Hugin: redo" in flag.text
    assert Crow.objects.get(name="Hugin").status == "quarantined"
    assert flag.then is not None  # the owner's decision opens on the flag once it is said


def test_sentry_reads_nothing_in_a_post_without_a_finding(launch):
    assert run(sentry.react, posted(launch, "Hugin", "hello")) == NOTHING


def test_quarantine_notice_tells_whoever_addressed_a_quarantined_crow(launch):
    Crow.objects.filter(name="Munin").update(status="quarantined")
    post = posted(launch, OWNER, "@Munin are you there?", to="Munin")
    [notice] = run(sentry.quarantine_notice, post).say
    assert (notice.author, notice.to, notice.refers_to) == (HARNESS, OWNER, post.message.msg_id)
    assert "Munin is quarantined" in notice.text
    assert run(sentry.quarantine_notice, posted(launch, OWNER, "@Hugin hi", to="Hugin")) == NOTHING


def test_the_sentry_or_elder_addressed_gets_one_line_on_what_they_do(launch):
    post = posted(launch, OWNER, "@Elder what do you make of it?")
    [line] = run(silent.react, post).say
    assert (line.author, line.to, line.refers_to) == (HARNESS, OWNER, post.message.msg_id)
    assert line.text.startswith("@owner Elder merges") and "Ask Quill" in line.text
    assert run(silent.react, posted(launch, OWNER, "@Hugin hi", to="Hugin")) == NOTHING


def test_the_decision_phrase_answers_the_decision_and_nothing_else_happens(launch):
    from nests.actions.chat.flags import flag_breach

    decision = flag_breach(
        Crow.objects.get(name="Hugin"), nest=launch, finding=sentry.Finding(kind="redo", score=1.0, evidence="x")
    )
    assert decision is not None
    assert run(decision_phrase.react, posted(launch, OWNER, "not the phrase")) == NOTHING
    effects = run(decision_phrase.react, posted(launch, OWNER, decision.phrase))
    assert effects.done and not effects.say and not effects.invoke
    assert Crow.objects.get(name="Hugin").status == "active"


def test_work_records_the_request_a_message_opens_and_hands_it_on(launch):
    post = posted(launch, OWNER, "@Hugin summarise the notes", kind="request", to="Hugin", request_facts=("solo", "summary", []))
    assert run(work.react, post) == NOTHING
    assert post.request is not None and post.request.addressed == "Hugin"
    assert ChatRequest.objects.get().message == post.message


def test_work_records_a_claim_that_stood(launch):
    request = posted(launch, OWNER, "summarise", kind="request", request_facts=("solo", "summary", []))
    run(work.react, request)
    claim = posted(launch, "Hugin", "Mine.", kind="claim", refers_to=request.message.msg_id, target=request.request, claiming=True)
    assert run(work.react, claim) == NOTHING
    assert claim.claim is not None and claim.claim.crow == "Hugin"
    assert ChatRequest.objects.get().state == "claimed"


def test_dispatch_asks_for_the_addressed_crow(launch):
    post = posted(launch, OWNER, "@Hugin summarise the notes", kind="request", to="Hugin", request_facts=("solo", "summary", []))
    run(work.react, post)
    effects = run(dispatch.react, post)
    assert effects.invoke == [Invoke("Hugin", "addressed", "claim", task_type="summary")]
    assert not effects.say and Invocation.objects.count() == 0  # asked for, not queued: the loop queues


def test_dispatch_invokes_a_nudged_crow_and_nobody_for_crows_talk(launch):
    nudge = posted(launch, HARNESS, "[NUDGE launch-1] [nudge 1/3] @Munin, deliver", kind="nudge", to="Munin", harness=True)
    assert [i.crow for i in run(dispatch.react, nudge).invoke] == ["Munin"]
    assert run(dispatch.react, posted(launch, "Hugin", "Nice weather.")) == NOTHING


def test_expectations_open_what_a_claim_promises_and_say_nothing(launch):
    request = posted(launch, OWNER, "summarise", kind="request", request_facts=("solo", "summary", []))
    run(work.react, request)
    claim = posted(launch, "Hugin", "Mine, in five minutes.", kind="claim", refers_to=request.message.msg_id,
                   target=request.request, claiming=True)
    run(work.react, claim)
    assert run(expectations.react, claim) == NOTHING
    exp = Expectation.objects.get()
    assert (exp.crow, exp.check_name, exp.due_from) == ("Hugin", "promise_kept", "text")


def _debate(room, **kw) -> Debate:
    fields = dict(
        debate_id="debate-1", nest=room, question="Go or Python?", moderator="Boss", crows=["Hugin", "Munin"],
        stances={"Hugin": "for Go", "Munin": "for Python"}, judge="Pepper", rounds=1, turn_order=True, round=1,
        cued="Hugin", cue_msg_id="launch-1", asked_msg_id="launch-1",
    )
    fields.update(kw)
    return Debate.objects.create(**fields)


def test_debates_cue_the_next_speaker_when_the_cued_crow_speaks(launch):
    say(launch, author="Boss", text="Round 1: @Hugin, you first.", to="Hugin")
    _debate(launch)
    turn = posted(launch, "Hugin", "Go is faster.")
    [cue] = run(debates.react, turn).say
    assert (cue.author, cue.to, cue.refers_to) == ("Boss", "Munin", turn.message.msg_id)
    assert [(e.crow, e.check) for e in cue.opens] == [("Munin", "turn_order")]
    assert Debate.objects.get().cued == "Munin"


def test_debates_nudge_a_crow_speaking_out_of_turn(launch):
    say(launch, author="Boss", text="Round 1: @Hugin, you first.", to="Hugin")
    _debate(launch)
    [nudge] = run(debates.react, posted(launch, "Munin", "Python is fine.")).say
    assert (nudge.author, nudge.kind, nudge.to) == (HARNESS, "nudge", "Munin")
    assert run(debates.react, posted(launch, OWNER, "go on")) == NOTHING


def test_orchestration_scores_a_pick_by_quill_and_nothing_else(launch):
    request = posted(launch, "Quill", "@Hugin, for @owner: summarise", kind="request", to="Hugin",
                     request_facts=("solo", "summary", []))
    run(work.react, request)
    effects = run(orchestration.react, request)
    assert all(s.kind == "nudge" and s.to == "Quill" for s in effects.say) and not effects.invoke
    from nests.models import OrchestrationDecision

    assert OrchestrationDecision.objects.get().crow == "Hugin"
    owners = posted(launch, OWNER, "@Hugin go", kind="request", to="Hugin", request_facts=("solo", "summary", []))
    run(work.react, owners)
    assert run(orchestration.react, owners) == NOTHING


def test_the_loop_stops_at_its_bound_and_says_so(launch, monkeypatch, caplog):
    def echo(post: Posted) -> Effects:
        return Effects(say=[Say(author=HARNESS, text="again")])

    monkeypatch.setattr(react, "REACTORS", (("echo", echo),))
    with caplog.at_level(logging.WARNING, logger="crows.chat"):
        react.apply(Effects(say=[Say(author=HARNESS, text="start")]), room=launch)
    assert NestMessage.objects.filter(nest=launch).count() == react.MAX_DEPTH + 1
    assert any("chat loop bound hit" in r.getMessage() for r in caplog.records)


# --- speaking rights, read directly ----------------------------------------------------------


def test_rights_a_request_needs_trust_a_claim_a_regular_unless_given(launch):
    from nests.actions.chat import rights
    from tests.support.scripted_brain import give_rights

    hugin = Crow.objects.get(name="Hugin")
    rule = rights.refusal(hugin, kind="request", target=None, task_type="data", invocation=None)
    assert rule == "only a trusted crow opens requests, and Hugin is a stranger for data"
    assert rights.refusal(hugin, kind="say", target=None, task_type="data", invocation=None) == ""
    opened = posted(launch, OWNER, "find the notes", kind="request", request_facts=("solo", "writing", []))
    run(work.react, opened)
    open_request = opened.request
    assert "a stranger claims only a request it was given" in rights.refusal(
        hugin, kind="claim", target=open_request, task_type="", invocation=None
    )
    assert "delivers on a request it claimed or was given" in rights.refusal(
        hugin, kind="deliver", target=open_request, task_type="", invocation=None
    )
    given = posted(launch, OWNER, "@Hugin find them", kind="request", to="Hugin", request_facts=("solo", "writing", []))
    run(work.react, given)
    assert rights.refusal(hugin, kind="claim", target=given.request, task_type="", invocation=None) == ""
    give_rights("Hugin")
    assert rights.refusal(hugin, kind="claim", target=open_request, task_type="", invocation=None) == ""
    quill = Crow.objects.get(name="Quill")
    assert rights.refusal(quill, kind="request", target=None, task_type="data", invocation=None) == ""


def test_work_says_the_rights_note_and_records_nothing(launch):
    post = posted(launch, "Munin", "pull the numbers", rights_note="Munin's request launch-1 is kept as talk")
    [line] = run(work.react, post).say
    assert (line.author, line.to, line.refers_to, line.text) == (HARNESS, "Munin", post.message.msg_id, post.rights_note)
    assert post.request is None and not ChatRequest.objects.exists()
