"""Corrections acknowledged once (docs/GOVERNANCE.md, "5. Corrections acknowledged once"):
the owner's correction of a crow's message invokes that crow alone, which owes one answer
(`correction_handled`); a second answer, or another crow's, is stored and invokes no one.
Driven by `script:` brains, and dispatch handed a message directly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flock.models import Crow
from flock.vocab import OWNER, MessageKind
from nests.actions import create_nest, post_message
from nests.actions.chat import corrections, dispatch
from nests.actions.chat.room import say
from nests.actions.chat.timers import check_expectation
from nests.models import Expectation, Invocation, NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import make_trusted, run_crows

pytestmark = pytest.mark.usefixtures("fake_jev")
fake_jev = chat_support.fake_jev

ACKS = [
    {"crow": "Hugin", "match": "friday", "reply": "[ACK {msg_id}] Sorry, my mistake: the launch is on Friday. Fixed."},
    {"crow": "Hugin", "match": "NUDGE", "reply": "[ACK {refers_to}] Noted: Friday."},
    {"crow": "*", "reply": "Happy to help."},
]


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin", "Pepper"])


@pytest.fixture
def script(settings, tmp_path: Path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(ACKS))
    settings.CROWS_BRAIN = f"script:{path}"


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        ("No, the launch is on Friday.", True),
        ("That's wrong: it's Friday", True),
        ("not quite — Friday, not Monday", True),
        ("You got the date wrong", True),
        ("It should be Friday", True),
        ("Actually, it's Friday", True),
        ("Thanks, lovely work", False),
        ("Now do the EU prices too", False),
        ("Nobody told me", False),
    ],
)
def test_a_correction_is_read_by_its_words(text, reads):
    assert corrections.is_correction_text(text) is reads


def test_dispatch_invokes_the_corrected_crow_alone_whoever_is_addressed(launch):
    hugin = say(launch, author="Hugin", text="The launch is on Monday.")
    fix = say(launch, author=OWNER, text="@Munin no, Hugin has it wrong: Friday", to="Munin", refers_to=hugin.msg_id)
    decision = dispatch.decide(fix, claim=None, request=None)
    assert decision is not None and (decision.crow, decision.reason, decision.expect) == ("Hugin", "correction", "say")
    # Referring to a crow's message without correcting it is ordinary talk: Munin answers.
    thanks = say(launch, author=OWNER, text="@Munin thanks for this", to="Munin", refers_to=hugin.msg_id)
    assert dispatch.decide(thanks, claim=None, request=None).crow == "Munin"
    # Correcting the owner's own words, or no message, is no correction of a crow.
    mine = say(launch, author=OWNER, text="The launch is on Monday.")
    assert corrections.corrected_crow(say(launch, author=OWNER, text="no, Friday", refers_to=mine.msg_id)) == ""


def test_the_corrected_crow_answers_once_and_nobody_else_is_invoked(launch, script):
    make_trusted("Munin", "writing")  # a trusted crow's request would call a crow in, but not here
    hugin = post_message("launch", author="Hugin", text="The launch is on Monday.")
    fix = post_message("launch", author="owner", text="No, the launch is on Friday, not Monday.", refers_to=hugin.msg_id)
    assert list(Invocation.objects.values_list("crow", "reason")) == [("Hugin", "correction")]
    owed = Expectation.objects.get(check_name="correction_handled")
    assert (owed.crow, owed.message, owed.status) == ("Hugin", fix, "open")
    assert f"corrected on its {hugin.msg_id} in {fix.msg_id}" in owed.expected
    run_crows()
    ack = NestMessage.objects.get(author="Hugin", refers_to=fix.msg_id)
    assert "Friday" in ack.text
    owed.refresh_from_db()
    assert (owed.status, owed.outcome_msg_id) == ("met", ack.msg_id)
    before = Invocation.objects.count()
    # A second acknowledgement, and another crow answering the correction (even a trusted
    # crow's request): stored, and nobody is invoked.
    again = post_message("launch", author="Hugin", text="Again, sorry about Monday.", refers_to=fix.msg_id)
    chime = post_message("launch", author="Munin", text="@Pepper please double-check the date", kind="request",
                         refers_to=fix.msg_id)
    assert NestMessage.objects.filter(pk__in=[again.pk, chime.pk]).count() == 2
    assert Invocation.objects.count() == before


def test_an_unanswered_correction_is_nudged_by_the_clock(launch, settings):
    settings.CROWS_EXPECTATION_DUE_S = 0
    settings.CROWS_EXCHANGES_PER_TURN = 3
    hugin = post_message("launch", author="Hugin", text="The launch is on Monday.")
    post_message("launch", author="owner", text="That's wrong, it's Friday.", refers_to=hugin.msg_id)
    owed = Expectation.objects.get(check_name="correction_handled")
    Invocation.objects.filter(crow="Hugin").update(status=Invocation.Status.FAILED)  # its brain never answered
    assert check_expectation(owed.pk) == "nudged 1/3"
    [nudge] = NestMessage.objects.filter(kind=MessageKind.NUDGE)
    assert nudge.to == "Hugin" and "acknowledge it once, and redo the work or explain" in nudge.text


def test_a_quarantined_crow_corrected_is_not_invoked(launch):
    hugin = post_message("launch", author="Hugin", text="The launch is on Monday.")
    Crow.objects.filter(name="Hugin").update(status="quarantined")
    post_message("launch", author="owner", text="No, Friday.", refers_to=hugin.msg_id)
    assert not Invocation.objects.exists()
    assert not Expectation.objects.filter(check_name="correction_handled").exists()
