"""Quill brings the owner decisions (docs/GOVERNANCE.md, "1. Quill brings decisions"): a
crow's [ASK_OWNER …] opens a choice, answered by the card (the API), by the owner's word in
the room, refused when it names no option, or timed out; the asking crow is invoked with
the outcome, and never goes ahead on its own recommendation when nobody chose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.utils import timezone

from flock.brains.header import parse_ask_owner
from flock.errors import BadInput
from nests.actions import create_nest, post_message
from nests.models import Invocation, NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import run_crows
from trust.actions import answer_decision
from trust.models import Decision
from trust.queries import decision_record

pytestmark = pytest.mark.usefixtures("fake_jev")

fake_jev = chat_support.fake_jev

ASK = "[ASK_OWNER ship-day] When do we ship? A: Friday | B: Monday, after QA | recommend B because QA needs the weekend"
RULES = [
    {"crow": "Hugin", "match": "nobody chose", "reply": "Understood: I wait, nothing ships."},
    {"crow": "Hugin", "match": "chose A: Friday", "reply": "Shipping Friday, as you chose."},
    {"crow": "Hugin", "match": "chose B: Monday", "reply": "Shipping Monday, as you chose."},
    {"crow": "Hugin", "match": "plan the release", "reply": ASK},
]


@pytest.fixture
def launch(db, settings, tmp_path: Path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(RULES))
    settings.CROWS_BRAIN = f"script:{path}"
    return create_nest("Launch", crows=["Hugin", "Munin"])


def asked() -> Decision:
    """The owner asks Hugin; Hugin's answer is an ask; Quill opens the choice."""
    post_message("launch", author="owner", text="@Hugin plan the release")
    run_crows()
    return Decision.objects.get(kind=Decision.Kind.CHOICE)


def said(author: str) -> list[NestMessage]:
    return list(NestMessage.objects.filter(nest__nest_id="launch", author=author).order_by("n"))


def post_json(client, path: str, body: object):
    return client.post(path, data=json.dumps(body), content_type="application/json")


def test_the_header_grammar():
    ask = parse_ask_owner(ASK)
    assert ask is not None and not ask.problem
    assert (ask.ask_id, ask.question, ask.options) == ("ship-day", "When do we ship?", ("A: Friday", "B: Monday, after QA"))
    assert (ask.recommended, ask.reason) == ("B", "QA needs the weekend")
    assert parse_ask_owner("[ACK launch-1] fine") is None
    assert "recommends nothing" in parse_ask_owner("[ASK_OWNER x] Which? A: one | B: two").problem
    assert "not one of its options" in parse_ask_owner("[ASK_OWNER x] A: one | B: two | recommend C because y").problem
    assert "in order" in parse_ask_owner("[ASK_OWNER x] A: one | recommend A because y").problem


def test_a_crows_ask_opens_a_choice_quill_brings_to_the_owner(launch, client, capture_events):
    decision = asked()
    ask = said("Hugin")[0]
    announcement = said("Quill")[-1]
    assert announcement.to == "owner" and announcement.refers_to == ask.msg_id
    assert "Hugin needs you to choose (ship-day)" in announcement.text and "recommends B because QA" in announcement.text
    record = decision_record(decision)
    assert (record["crow"], record["nest_id"], record["msg_id"], record["refers_to"]) == (
        "Hugin", "launch", announcement.msg_id, ask.msg_id,
    )
    assert record["options"] == ["A: Friday", "B: Monday, after QA"]
    assert (record["recommendation"], record["recommended"]) == ("B because QA needs the weekend", "B: Monday, after QA")
    listed = client.get("/api/decisions?status=open").json()
    assert [d["decision_id"] for d in listed] == [decision.decision_id] and listed[0]["kind"] == "choice"


def test_a_choice_answered_by_the_card_goes_back_to_the_crow(launch, client, capture_events):
    decision = asked()
    with capture_events() as events:
        response = post_json(client, f"/api/decisions/{decision.decision_id}", {"answer": "A"})
    assert response.status_code == 200, response.content
    assert (response.json()["outcome"], response.json()["answer"]) == ("A: Friday", "A")
    closed = events.named("decision.closed")[0]
    assert (closed["outcome"], closed["by"], closed["crow"]) == ("A: Friday", "owner", "Hugin")
    told = said("Quill")[-1]
    assert told.to == "Hugin" and "the owner chose A: Friday" in told.text
    invocation = Invocation.objects.get(trigger=told)
    assert (invocation.crow, invocation.reason) == ("Hugin", "decision")
    run_crows()
    assert said("Hugin")[-1].text == "Shipping Friday, as you chose."


def test_the_options_words_answer_it_too(launch, client):
    decision = asked()
    response = post_json(client, f"/api/decisions/{decision.decision_id}", {"answer": "monday, after qa"})
    assert response.status_code == 200 and response.json()["outcome"] == "B: Monday, after QA"


def test_an_answer_that_is_no_option_is_a_400_naming_the_options(launch, client):
    decision = asked()
    response = post_json(client, f"/api/decisions/{decision.decision_id}", {"answer": "Tuesday"})
    assert response.status_code == 400
    message = response.json()["message"]
    assert "“A: Friday”" in message and "“B: Monday, after QA”" in message
    decision.refresh_from_db()
    assert decision.status == "open"
    with pytest.raises(BadInput):
        answer_decision(decision, answer="no")


def test_the_owner_saying_the_option_in_the_room_answers_it(launch):
    decision = asked()
    posted = post_message("launch", author="owner", text="B")
    decision.refresh_from_db()
    assert (decision.status, decision.outcome, decision.answered_by) == ("closed", "B: Monday, after QA", "owner")
    # The owner's word answered the decision; it called no crow itself.
    assert not Invocation.objects.filter(trigger=posted).exists()
    run_crows()
    assert said("Hugin")[-1].text == "Shipping Monday, as you chose."


def test_other_words_in_the_room_are_only_talk(launch):
    decision = asked()
    post_message("launch", author="owner", text="Let me think about it")
    decision.refresh_from_db()
    assert decision.status == "open"


def test_no_answer_by_the_deadline_tells_the_crow_nobody_chose(launch, settings):
    settings.CROWS_DECISION_TIMEOUT_S = 0
    decision = asked()
    run_crows()  # the timeout task is due at once; the crow it invokes answers
    decision.refresh_from_db()
    assert (decision.status, decision.outcome) == ("closed", "timeout")
    told = [m for m in said("Quill") if m.to == "Hugin"][-1]
    assert "nobody chose" in told.text and "do not go ahead on your own recommendation" in told.text
    assert said("Hugin")[-1].text == "Understood: I wait, nothing ships."
    assert not any("Shipping" in m.text for m in said("Hugin"))
    assert decision.closed_at is not None and decision.closed_at <= timezone.now()


def test_an_ask_without_options_gets_the_grammar_and_opens_nothing(launch):
    post_message("launch", author="Hugin", text="[ASK_OWNER ship-day] Should we ship? | recommend A because yes")
    note = said("harness")[-1]
    assert note.to == "Hugin" and "brings the owner no decision" in note.text and "[ASK_OWNER <id>]" in note.text
    assert not Decision.objects.exists()


def test_an_ask_is_a_say_however_jev_reads_it(launch, fake_jev):
    # Jev sure the options read like a delivery: the ask still delivers nothing.
    fake_jev.kinds = {"friday": "deliver"}
    asked()
    ask = said("Hugin")[0]
    assert (ask.kind, ask.tagged_by) == ("say", "header")
