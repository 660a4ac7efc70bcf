"""One crow, many rooms (docs/GOVERNANCE.md): a fact the owner tells a crow in its direct
chat is in that crow's prompt when it is asked in a nest, marked with the room, and the
offline mock brain visibly draws on it; no other crow remembers it."""

from __future__ import annotations

import pytest

from flock.brains import get_brain
from nests.actions import create_nest, post_message
from nests.models import NestMessage
from nests.queries_memory import remember
from tests.support.scripted_brain import run_crows

FACT = "Remember this: the launch code is PELICAN-42."


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin"])


def test_a_fact_told_in_the_direct_chat_is_used_in_a_nest(launch, monkeypatch, client):
    prompts = []
    real = get_brain

    def spy(spec=""):
        brain = real(spec)

        class Spy:
            provider = brain.provider

            def think(self, request):
                prompts.append(request)
                return brain.think(request)

        return Spy()

    monkeypatch.setattr("nests.actions.chat.crows.get_brain", spy)
    told = post_message("dm-hugin", author="owner", text=FACT)
    run_crows()
    prompts.clear()
    post_message("launch", author="owner", text="@Hugin what is the launch code?")
    run_crows()
    hugin = [p for p in prompts if p.persona.name == "Hugin"][-1]
    assert "dm-hugin" in hugin.system and "PELICAN-42" in hugin.system
    assert hugin.context["memory"][0]["room"] == "dm-hugin" and hugin.context["memory"][0]["private"]
    reply = NestMessage.objects.filter(nest__nest_id="launch", author="Hugin").last()
    assert reply is not None
    assert "PELICAN-42" in reply.text and "dm-hugin" in reply.text, reply.text
    # Munin was never told; the owner's direct chat with Hugin is not Munin's memory.
    assert all(item["msg_id"] != told.msg_id for item in remember("Munin", query="launch code"))
    body = client.get("/api/crows/Hugin/memory?q=launch code").json()
    remembered = {i["msg_id"]: i for i in body["items"]}
    assert body["crow"] == "Hugin" and told.msg_id in remembered
    assert (remembered[told.msg_id]["room"], remembered[told.msg_id]["role"]) == ("dm-hugin", "told")
    assert remembered[told.msg_id]["private"] is True
    munin = client.get("/api/crows/Munin/memory?q=launch code").json()
    assert told.msg_id not in [i["msg_id"] for i in munin["items"]]
    assert client.get("/api/crows/Nobody/memory").status_code == 404
    bad = client.get("/api/crows/Hugin/memory?limit=zero")
    assert bad.status_code == 400 and "message" in bad.json()


def test_memory_is_bounded_in_tokens(launch, settings):
    for n in range(30):
        post_message("dm-munin", author="owner", text=f"Note {n}: the quarterly numbers look {'good ' * 20}")
    settings.CROWS_MEMORY_TOKENS = 100
    items = remember("Munin", query="quarterly numbers")
    assert 0 < len(items) < 30
    assert sum(len(i["text"].split()) * 1.3 + 8 for i in items) <= 100 + 1


def test_the_mock_repeats_the_owners_private_words_only_where_they_fit():
    from flock.brains.mock_debate import recall

    private = {"room": "dm-pepper", "author": "owner", "role": "told", "private": True,
               "text": "Pepper, why did you redo Rook's tweet about the blend?"}
    shared = {**private, "room": "launch", "private": False}
    # One word in passing ("blend") is not enough to repeat the owner's private words...
    assert recall([private], "Name the house blend for the spring menu") == ""
    # ...it is for what was said in a shared room, and for a private item that fits the question.
    assert recall([shared], "Name the house blend for the spring menu").startswith("From launch, I remember")
    assert recall([private], "Who redid Rook's tweet?").startswith("From dm-pepper, I remember the owner told me")
