"""Jev judges the open expectations against the room, and the checks a delivery can fail
(docs/GOVERNANCE.md, "4. Jev judges expectations against the room"): a sure `met` from the
responsible crow closes one, a sure `missed` nudges at once (once), an unsure answer is
kept as Jev's reading, every answer is logged; without a model the ledger's rules and
clock decide. `claims_sourced` and `role_adherence` open on a failing delivery, nudged at
once, and close when the crow does what the nudge asked. Driven by `script:` brains, and
the reactor handed a room and a message directly."""

from __future__ import annotations

import pytest
from django.db import transaction

from flock.events import lock_event_log
from flock.models import Crow, JevTag
from flock.vocab import OWNER, MessageKind
from nests.actions import create_nest, post_message
from nests.actions.chat import checks, met
from nests.actions.chat.effects import NOTHING, Posted
from nests.actions.chat.ledger import open_expectation
from nests.actions.chat.room import say
from nests.actions.chat.timers import check_expectation
from nests.models import ChatRequest, Expectation, NestMessage
from nests.queries_ledger import expectations_in
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import FakeJev, give_rights, run_crows

pytestmark = pytest.mark.usefixtures("fake_jev")
fake_jev = chat_support.fake_jev


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin", "Pepper"])


def nudges(crow: str = "Hugin") -> list[NestMessage]:
    return list(NestMessage.objects.filter(kind=MessageKind.NUDGE, to=crow).order_by("n"))


# --- the reactor, in process --------------------------------------------------------------


def _owed(room, crow: str = "Hugin") -> Expectation:
    request = say(room, author=OWNER, text=f"@{crow} write the launch tweet", kind=MessageKind.REQUEST, to=crow)
    with transaction.atomic():
        return open_expectation(request, crow=crow, check=Expectation.Check.REQUESTER_ANSWER, expected="answer it")


def _judge(room, exp: Expectation, author: str, text: str, choice: str, band: str):
    message = say(room, author=author, text=text)
    answer = FakeJev._answer("expectation_met", ("met", "missed", "pending"), choice, band)
    posted = Posted(room=room, message=message, met_answers={exp.pk: answer})
    with transaction.atomic():
        lock_event_log()
        return message, met.react(posted)


def test_a_sure_met_from_the_crow_closes_it_and_is_logged_with_its_probabilities(launch):
    exp = _owed(launch)
    message, effects = _judge(launch, exp, "Hugin", "Here is the tweet: crows, now in nests.", "met", "high")
    assert effects == NOTHING or not effects.say
    exp.refresh_from_db()
    assert (exp.status, exp.outcome_msg_id) == ("met", message.msg_id)
    assert exp.reason.startswith(f"Jev read {message.msg_id} as meeting it (p 0.95)")
    tag = JevTag.objects.get(question="expectation_met")
    assert tag.subject == message.msg_id and tag.probs["met"] == pytest.approx(0.95)
    assert tag.outcome == {"expectation_id": exp.expectation_id, "done": "closed met"}
    assert tag.text == met.met_text(exp.message, "Hugin", message.text)
    assert tag.text.startswith("_by_asked_ Here is the tweet: crows, now in nests.\n⟶ @Hugin write the launch tweet")


def test_a_sure_missed_nudges_at_once_and_only_once(launch):
    exp = _owed(launch)
    message, effects = _judge(launch, exp, "Hugin", "Not doing tweets today.", "missed", "high")
    [nudge] = effects.say
    assert (nudge.kind, nudge.to, nudge.refers_to) == ("nudge", "Hugin", exp.message.msg_id)
    assert f"Jev reads {message.msg_id} as missing it (p 0.95)" in nudge.text
    exp.refresh_from_db()
    assert exp.jev["early_nudge"] == message.msg_id and exp.status == "open"
    # Jev reading the next message as missed too does not nudge again: the clock does.
    _, again = _judge(launch, exp, "Hugin", "Still not doing it.", "missed", "high")
    assert not again.say
    assert [t.outcome["done"] for t in JevTag.objects.filter(question="expectation_met").order_by("id")] == [
        "nudged", "read",
    ]


def test_an_unsure_answer_or_another_speaker_changes_nothing_but_is_kept(launch):
    exp = _owed(launch)
    message, effects = _judge(launch, exp, "Hugin", "thinking about it", "met", "unsure")
    assert not effects.say
    exp.refresh_from_db()
    assert exp.status == "open" and exp.jev["met"] == {"choice": "met", "p": 0.5, "band": "unsure", "msg_id": message.msg_id}
    # Munin is not the crow that owes it: a sure reading of Munin's words closes nothing.
    _, effects = _judge(launch, exp, "Munin", "Hugin's tweet is great", "met", "high")
    exp.refresh_from_db()
    assert exp.status == "open" and not effects.say


def test_a_quarantined_crow_is_not_nudged_by_jev(launch):
    exp = _owed(launch)
    Crow.objects.filter(name="Hugin").update(status="quarantined")
    _, effects = _judge(launch, exp, "Hugin", "No.", "missed", "high")
    assert not effects.say


# --- a room, with scripted crows ----------------------------------------------------------

CLAIMS_THEN_TALKS = [
    {"crow": "Hugin", "match": "NUDGE", "reply": "[RESULT {refers_to}] The tweet: crows, now in nests."},
    {"crow": "Hugin", "match": "tweet", "reply": "[CLAIM {msg_id}] Mine."},
    {"crow": "Hugin", "reply": "Working on it."},
]


def test_jev_closes_a_claim_met_on_the_crows_words(launch, script, fake_jev: FakeJev):
    script(CLAIMS_THEN_TALKS)
    fake_jev.met = {"here it is": ("met", "high")}
    post_message("launch", author="owner", text="@Hugin write the launch tweet", kind="request")
    run_crows()
    owed = Expectation.objects.get(check_name="single_owner")
    assert owed.status == "open"
    # Talk, not a delivery by its kind; Jev reads it as the work done.
    said = post_message("launch", author="Hugin", text="here it is: crows, now in nests")
    owed.refresh_from_db()
    assert (owed.status, owed.outcome_msg_id) == ("met", said.msg_id)
    tags = JevTag.objects.filter(question="expectation_met", subject=said.msg_id)
    assert {t.outcome["expectation_id"] for t in tags} == {owed.expectation_id}


def test_jev_reading_a_miss_nudges_the_crow_before_its_deadline(launch, script, fake_jev: FakeJev):
    script(CLAIMS_THEN_TALKS)
    fake_jev.met = {"not today": ("missed", "high")}
    post_message("launch", author="owner", text="@Hugin write the launch tweet", kind="request")
    run_crows()
    owed = Expectation.objects.get(check_name="single_owner")
    said = post_message("launch", author="Hugin", text="not today, sorry")
    [nudge] = nudges()
    assert f"Jev reads {said.msg_id} as missing it" in nudge.text and nudge.text.startswith("[NUDGE ")
    run_crows()  # the nudge invoked Hugin, which delivers
    owed.refresh_from_db()
    assert owed.status == "met" and owed.nudges == 1


def test_without_a_model_the_rules_and_the_clock_decide(launch, script, settings, fake_jev: FakeJev):
    settings.CROWS_EXPECTATION_DUE_S = 0
    script([{"crow": "Hugin", "match": "NUDGE", "reply": "[RESULT {refers_to}] Done."},
            {"crow": "Hugin", "match": "tweet", "reply": "[CLAIM {msg_id}] Mine."},
            {"crow": "Hugin", "reply": "Working on it."}])
    assert fake_jev.met == {}  # Jev cannot answer expectation_met: nothing is logged for it
    post_message("launch", author="owner", text="@Hugin write the launch tweet", kind="request")
    run_crows()
    assert not JevTag.objects.filter(question="expectation_met").exists()
    owed = Expectation.objects.get(check_name="single_owner")
    assert (owed.status, owed.nudges) == ("met", 1)  # nudged by the clock, met by the delivery


# --- claims sourced -----------------------------------------------------------------------

SOURCED = [
    {"crow": "Hugin", "match": "NUDGE", "reply": "[RESULT {refers_to}] Corvids cache food; see corvid-notes.md."},
    {"crow": "Hugin", "match": "cite", "reply": "[CLAIM {msg_id}] Mine."},
    {"crow": "Hugin", "reply": "Working on it."},
]


def test_a_delivery_that_cites_nothing_on_a_request_for_sources_is_nudged_then_met(launch, script):
    script(SOURCED)
    request = post_message(
        "launch", author="owner", kind="request",
        text="@Hugin write a paragraph on corvid memory and cite your sources (the notes are in corvid-notes.md)",
    )
    run_crows()  # Hugin claims; the claim invokes it to deliver
    # Its brain has no rule for a delivery, so the deliver comes over the API, citing nothing.
    delivery = post_message("launch", author="Hugin", text="Corvids remember faces.", kind="deliver", refers_to=request.msg_id)
    exp = Expectation.objects.get(check_name="claims_sourced")
    assert (exp.crow, exp.message, exp.request.message) == ("Hugin", delivery, request)
    [nudge] = nudges()
    assert f"{request.msg_id} asked for sources and your delivery {delivery.msg_id} cites none" in nudge.text
    assert "[nudge 1/3]" in nudge.text
    run_crows()  # the nudge invokes Hugin, which cites the notes the owner named
    exp.refresh_from_db()
    assert exp.status == "met" and exp.reason == "Hugin cited corvid-notes.md"
    # In the room's panel, as every expectation.
    assert [e["check"] for e in expectations_in(launch) if e["check"] == "claims_sourced"] == ["claims_sourced"]


def test_a_made_up_source_does_not_meet_it_and_a_sourced_delivery_opens_nothing(launch, script):
    script([{"crow": "Hugin", "match": "cite", "reply": "[CLAIM {msg_id}] Mine."}, {"crow": "*", "reply": "Working on it."}])
    request = post_message("launch", author="owner", kind="request", text="@Hugin draft a post on crows, cite sources")
    run_crows()
    post_message("launch", author="Hugin", text="Crows use tools.", kind="deliver", refers_to=request.msg_id)
    exp = Expectation.objects.get(check_name="claims_sourced")
    post_message("launch", author="Hugin", text="See https://made.up/crows", kind="say", refers_to=request.msg_id)
    exp.refresh_from_db()
    assert exp.status in Expectation.LIVE  # a link nobody gave it is no source
    # A second unsourced delivery does not open a second check or nudge again.
    post_message("launch", author="Hugin", text="Crows use tools, really.", kind="deliver", refers_to=request.msg_id)
    assert Expectation.objects.filter(check_name="claims_sourced").count() == 1 and len(nudges()) == 1
    # A request that asked for nothing of the kind opens no check, whatever is cited.
    other = post_message("launch", author="owner", kind="request", text="@Munin draft the tweet")
    post_message("launch", author="Munin", text="Crows, now in nests.", kind="deliver", refers_to=other.msg_id)
    assert Expectation.objects.filter(check_name="claims_sourced").count() == 1


# --- role adherence -----------------------------------------------------------------------


def test_work_outside_the_crows_role_that_nobody_gave_it_is_nudged(launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 0  # crows off: the posts come over the API
    give_rights("Pepper")  # a regular may claim open requests
    # Asked of Munin; Pepper takes it first, on its own.
    request = post_message("launch", author="owner", text="@Munin draft the launch tweet", kind="request")
    assert ChatRequest.objects.get(message=request).task_type == "writing"  # Pepper: code, data
    post_message("launch", author="Pepper", text="Taking it.", kind="claim", refers_to=request.msg_id)
    delivery = post_message("launch", author="Pepper", text="Crows, now in nests.", kind="deliver", refers_to=request.msg_id)
    exp = Expectation.objects.get(check_name="role_adherence")
    assert (exp.crow, exp.message) == ("Pepper", delivery)
    assert "outside its role (code, data)" in exp.expected
    [nudge] = nudges("Pepper")
    assert f"{request.msg_id} is writing work, outside your role (code, data), and nobody gave it to you" in nudge.text
    post_message("launch", author="Pepper", text="Inky was busy and it was short; I can hand it over.")
    exp.refresh_from_db()
    assert exp.status == "met"


def test_work_given_to_the_crow_is_not_a_role_breach(launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 0
    request = post_message("launch", author="owner", text="@Pepper draft the launch tweet", kind="request")
    post_message("launch", author="Pepper", text="Mine.", kind="claim", refers_to=request.msg_id)
    post_message("launch", author="Pepper", text="Crows, now in nests.", kind="deliver", refers_to=request.msg_id)
    assert not Expectation.objects.filter(check_name="role_adherence").exists()
    assert checks.given(ChatRequest.objects.get(message=request), "Pepper")


def test_a_conduct_check_is_not_settled_by_the_work_being_delivered(launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 0
    settings.CROWS_EXPECTATION_DUE_S = 0
    give_rights("Pepper")
    request = post_message("launch", author="owner", text="@Munin draft the launch tweet", kind="request")
    post_message("launch", author="Pepper", text="Taking it.", kind="claim", refers_to=request.msg_id)
    post_message("launch", author="Pepper", text="Crows, now in nests.", kind="deliver", refers_to=request.msg_id)
    exp = Expectation.objects.get(check_name="role_adherence")
    # The request is delivered; the role question is still open, so the clock escalates it
    # (no exchange left for a second nudge) instead of calling it met.
    assert check_expectation(exp.pk) == "escalated"
