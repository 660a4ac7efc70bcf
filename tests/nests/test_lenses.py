"""A restated lens gets a review nudge (docs/GOVERNANCE.md, "6. A restated lens"): in a
conspiracy, a delivery that restates an earlier lens's (content-word cosine >= 0.6) gets
one harness nudge asking that crow for a distinct angle, recorded as a `distinct_lens`
expectation; a distinct answer meets it, a second restatement is not nudged again, and
at its deadline the owner hears of it instead. Driven by scripted brains."""

from __future__ import annotations

import pytest

from flock.vocab import OWNER, MessageKind
from nests.actions import create_nest, post_message
from nests.actions.chat import checks
from nests.actions.chat.room import say
from nests.actions.chat.timers import check_expectation
from nests.models import ChatRequest, Expectation, Invocation, NestMessage
from nests.queries_memory import similarity
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import give_rights, run_crows

pytestmark = pytest.mark.usefixtures("fake_jev")
fake_jev = chat_support.fake_jev
script_brains = chat_support.script_brains

GO = "Rewrite billing in Go: faster builds, simpler deploys, fewer runtime errors in the billing service."
SAME = "Rewrite the billing service in Go for faster builds, simpler deploys and fewer runtime errors."
OTHER = "Do not rewrite: the data migration risk and the team's Python skills outweigh Go's speed."


@pytest.fixture
def launch(db, fake_jev):
    fake_jev.mode = "murder"
    give_rights("Hugin", "Munin")
    return create_nest("Launch", crows=["Hugin", "Munin"])


def lenses(readings: dict[str, list[str]]):
    """Claim when asked; deliver (or answer a nudge) with each crow's next reading."""

    def reply(request) -> str:
        name, msg_id = request.persona.name, request.context["msg_id"]
        if request.context.get("expect") == "claim":
            return f"[CLAIM {msg_id}] Mine."
        text = readings[name].pop(0) if readings[name] else "Nothing more."
        return f"[RESULT {msg_id}] {text}" if request.context.get("expect") == "deliver" else text

    return reply


def test_the_similarity_that_counts_as_restating():
    assert similarity(GO, SAME) >= checks.RESTATED_AT > similarity(GO, OTHER)


def test_a_restated_lens_is_nudged_once_for_a_distinct_angle_and_met_by_one(launch, script_brains):
    script_brains(lenses({"Hugin": [GO], "Munin": [SAME, OTHER]}))
    request = post_message("launch", author="owner", text="should we rewrite billing in Go?", kind="request")
    assert ChatRequest.objects.get(message=request).mode == "conspiracy"
    run_crows()
    first = NestMessage.objects.get(kind="deliver", author="Hugin")
    second = NestMessage.objects.get(kind="deliver", author="Munin")
    [nudge] = NestMessage.objects.filter(kind=MessageKind.NUDGE)
    assert (nudge.author, nudge.to, nudge.refers_to) == ("harness", "Munin", second.msg_id)
    assert "[nudge 1/1]" in nudge.text
    assert f"your delivery {second.msg_id} restates Hugin's {first.msg_id} (similarity " in nudge.text
    assert "give a distinct angle from your own lens" in nudge.text
    exp = Expectation.objects.get(check_name="distinct_lens")
    assert (exp.status, exp.reason) == ("met", "Munin gave a distinct angle")
    assert Invocation.objects.filter(crow="Munin", reason="nudge").count() == 1


def test_distinct_lenses_get_no_nudge(launch, script_brains):
    script_brains(lenses({"Hugin": [GO], "Munin": [OTHER]}))
    post_message("launch", author="owner", text="should we rewrite billing in Go?", kind="request")
    run_crows()
    assert not NestMessage.objects.filter(kind=MessageKind.NUDGE).exists()
    assert not Expectation.objects.filter(check_name="distinct_lens").exists()


def test_a_second_restatement_is_not_nudged_again_and_the_owner_hears_of_it(launch, script_brains, settings):
    script_brains(lenses({"Hugin": [GO], "Munin": [SAME, SAME]}))
    post_message("launch", author="owner", text="should we rewrite billing in Go?", kind="request")
    run_crows()
    exp = Expectation.objects.get(check_name="distinct_lens")
    assert exp.status in Expectation.LIVE and exp.nudges == 1
    post_message("launch", author="Munin", text=SAME, kind="deliver", refers_to="launch-1")
    assert NestMessage.objects.filter(kind=MessageKind.NUDGE).count() == 1
    exp.due_at = exp.opened_at
    exp.save(update_fields=["due_at"])
    assert check_expectation(exp.pk) == "escalated"
    summary = NestMessage.objects.filter(author="harness", to=OWNER).last()
    assert "was nudged once on" in summary.text and exp.expectation_id in summary.text


def test_the_reactor_reads_only_conspiracy_deliveries(launch):
    request = say(launch, author=OWNER, text="rewrite billing?", kind=MessageKind.REQUEST)
    solo = ChatRequest.objects.create(message=request, nest=launch, requester=OWNER, mode="solo", task_type="writing")
    say(launch, author="Hugin", text=GO, kind=MessageKind.DELIVER, refers_to=request.msg_id)
    again = say(launch, author="Munin", text=SAME, kind=MessageKind.DELIVER, refers_to=request.msg_id)
    assert checks.restated(solo, again) is not None  # it restates, but a solo request wants one answer
    assert checks._distinct_lens(again, solo) is None
