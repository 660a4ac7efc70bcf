"""EVENTS.md "Tagging": Jev above its high band stands (jev); Jev unsure, the poster's header
(header); both present and disagreeing, Jev wins (disagreement); neither, say (default).
Every tag is logged with its probabilities."""

from __future__ import annotations

import pytest

from flock.models import JevTag
from nests.actions import create_nest, post_message
from nests.models import ChatRequest
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import give_rights

# Shared fixtures (tests/support/scripted_brain.py), bound here so pytest finds them.
fake_jev = chat_support.fake_jev


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin"])


def kind_tag(msg_id: str) -> JevTag:
    return JevTag.objects.get(subject=msg_id, question="kind")


def test_jev_above_its_high_band_stands(launch, fake_jev):
    fake_jev.kinds = {"please": "request"}
    message = post_message("launch", author="owner", text="@Hugin please find the notes")
    assert (message.kind, message.tagged_by) == ("request", "jev")
    tag = kind_tag(message.msg_id)
    assert tag.choice == "request" and tag.band == "high"
    assert tag.probs["request"] == pytest.approx(0.95) and set(tag.probs) >= {"say", "claim", "request"}
    assert tag.outcome == {"kind": "request", "tagged_by": "jev", "header": ""}


def test_jev_agreeing_with_the_header_is_still_jev(launch, fake_jev):
    fake_jev.kinds = {"please": "request"}
    message = post_message("launch", author="owner", text="please find the notes", kind="request")
    assert (message.kind, message.tagged_by) == ("request", "jev")


def test_jev_unsure_uses_the_posters_header(launch, fake_jev):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    post_message("launch", author="owner", text="find the notes", kind="request")
    message = post_message("launch", author="Hugin", text="Leaving this with me.", kind="claim", refers_to="launch-1")
    assert (message.kind, message.tagged_by) == ("claim", "header")
    tag = kind_tag(message.msg_id)
    assert tag.band == "unsure" and tag.outcome == {"kind": "claim", "tagged_by": "header", "header": "claim"}


def test_jev_sure_and_disagreeing_with_the_header_wins_and_says_so(launch, fake_jev):
    give_rights("Hugin", "Munin", "Pepper", level=2)  # a trusted crow may deliver unasked (speaking rights)
    fake_jev.kinds = {"done": "deliver"}
    post_message("launch", author="owner", text="find the notes", kind="request")
    message = post_message("launch", author="Hugin", text="Done: the notes are here.", kind="say", refers_to="launch-1")
    assert (message.kind, message.tagged_by) == ("deliver", "disagreement")
    assert kind_tag(message.msg_id).outcome == {"kind": "deliver", "tagged_by": "disagreement", "header": "say"}


def test_neither_jev_nor_a_header_is_say_by_default(launch, fake_jev):
    message = post_message("launch", author="owner", text="hmm")
    assert (message.kind, message.tagged_by) == ("say", "default")
    assert kind_tag(message.msg_id).outcome["tagged_by"] == "default"


def test_a_jev_that_cannot_answer_falls_back_to_the_header(launch, monkeypatch):
    def broken(question, text):
        raise RuntimeError("model file missing")

    monkeypatch.setattr("flock.jev.ask", broken)
    message = post_message("launch", author="owner", text="find it", kind="request")
    assert (message.kind, message.tagged_by) == ("request", "header")
    plain = post_message("launch", author="owner", text="hello")
    assert (plain.kind, plain.tagged_by) == ("say", "default")
    request = ChatRequest.objects.get(message=message)
    assert (request.mode, request.task_type) == ("solo", "chat")


def test_crows_replies_are_tagged_the_same_way(launch, fake_jev):
    """A brain's header is the crow's kind; Jev still has the last word when sure."""
    fake_jev.kinds = {"not this one": "decline"}
    post_message("launch", author="owner", text="@Hugin find the notes", kind="request")
    reply = post_message("launch", author="Hugin", text="[CLAIM launch-1] Not this one, sorry.")
    assert (reply.kind, reply.tagged_by, reply.refers_to) == ("decline", "disagreement", "launch-1")
    assert kind_tag(reply.msg_id).text == "[CLAIM launch-1] Not this one, sorry."


def test_a_request_is_tagged_with_its_mode_and_task_type_too(launch, fake_jev):
    fake_jev.mode, fake_jev.task_type = "murder", "research"
    message = post_message("launch", author="owner", text="which launch date is best?", kind="request")
    request = ChatRequest.objects.get(message=message)
    assert (request.mode, request.task_type) == ("conspiracy", "research")
    questions = sorted(JevTag.objects.filter(subject=message.msg_id).values_list("question", flat=True))
    assert questions == ["kind", "mode", "task_type"]
    assert JevTag.objects.get(subject=message.msg_id, question="mode").outcome["mode"] == "conspiracy"


def test_an_unsure_murder_is_not_a_conspiracy(launch, fake_jev):
    fake_jev.mode, fake_jev.mode_band = "murder", "unsure"
    message = post_message("launch", author="owner", text="which one?", kind="request")
    assert ChatRequest.objects.get(message=message).mode == "solo"


def test_harness_messages_skip_jev(launch, fake_jev):
    from nests.actions.chat.room import say

    message = say(launch, author="harness", text="Budget spent.")
    assert (message.kind, message.tagged_by) == ("say", "header")
    assert not JevTag.objects.filter(subject=message.msg_id).exists()
    assert fake_jev.asked == []


def test_the_real_jev_tags_a_plain_request_and_logs_its_probabilities(launch):
    message = post_message("launch", author="owner", text="@Hugin please find out what the competitors charge")
    tag = kind_tag(message.msg_id)
    assert tag.impl and tag.version and abs(sum(tag.probs.values()) - 1) < 1e-3
    assert message.tagged_by in ("jev", "default")
    if tag.band == "high":
        assert message.kind == tag.choice
