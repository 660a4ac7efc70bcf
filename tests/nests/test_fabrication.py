"""Fabrication, as the spec means it (docs/GOVERNANCE.md, "7. Fabrication"): a delivery on
a research or retrieval request that cites nothing, or cites links or documents found
nowhere in the request, the room or the crow's memory, is a `fabricated_source` breach
with that evidence: quarantine, flag, the owner's decision. Sources the crow could have
read, and a delivery that says plainly it found none, are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flock.models import Crow
from flock.vocab import OWNER, MessageKind
from nests.actions import create_nest, post_message
from nests.actions.chat import sentry, sources
from nests.actions.chat.room import say
from nests.models import ChatRequest, NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import run_crows
from trust.models import Breach, Decision

pytestmark = pytest.mark.usefixtures("fake_jev")
fake_jev = chat_support.fake_jev


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin"])


def research(room, text: str = "@Hugin research what the competitors charge", task_type: str = "research") -> ChatRequest:
    message = say(room, author=OWNER, text=text, kind=MessageKind.REQUEST, to="Hugin")
    return ChatRequest.objects.create(message=message, nest=room, requester=OWNER, addressed="Hugin", task_type=task_type)


def read(request: ChatRequest, text: str) -> sentry.Finding | None:
    hugin = Crow.objects.get(name="Hugin")
    return sentry.check_post(author="Hugin", crow=hugin, kind=MessageKind.DELIVER, target=request, invocation=None, text=text)


def test_citing_nothing_on_a_research_request_is_fabrication(launch):
    request = research(launch)
    finding = read(request, "Competitors charge about 20 euros a month.")
    assert finding is not None and finding.kind == Breach.Kind.FABRICATED_SOURCE and finding.score == 1.0
    assert finding.subject == request.message.msg_id
    assert "a research request (“@Hugin research what the competitors charge”), citing nothing" in finding.evidence
    # "covid-19" and "top-10" name no room: they are no citations either.
    assert read(request, "Prices rose after covid-19; see the top-10 list.") is not None


def test_citing_what_appears_nowhere_is_fabrication_naming_it(launch):
    request = research(launch)
    finding = read(request, "Per https://prices.example/2026 and rival-pricing.pdf, 20 euros.")
    assert finding is not None
    assert "citing https://prices.example/2026, rival-pricing.pdf, found nowhere in the request, the room or the crow's memory" in finding.evidence


def test_sources_the_crow_could_have_read_are_no_fabrication(launch):
    request = research(launch)
    say(launch, author="Munin", text="The rivals' price sheet is at https://prices.example/2026")
    assert read(request, "Per https://prices.example/2026: 20 euros.") is None
    note = say(launch, author=OWNER, text="Old figures: 18 euros.")
    assert read(request, f"Up from 18 ({note.msg_id}) to 20.") is None
    # Told to Hugin in another room: its memory.
    other = create_nest("Ops", crows=["Hugin"])
    say(other, author=OWNER, text="@Hugin the finance deck is pricing-q3.key", to="Hugin")
    assert read(request, "pricing-q3.key says 20 euros.") is None
    # The crow's own earlier words are no source for itself.
    say(launch, author="Hugin", text="I think https://made.up/prices has it.")
    assert read(request, "Per https://made.up/prices: 20 euros.") is not None


def test_saying_plainly_there_is_no_source_is_no_fabrication(launch):
    request = research(launch)
    assert read(request, "I couldn't find any source for their prices; my guess is 20 euros.") is None
    assert read(request, "20 euros.\nSources: none; the offline mock brain looks nothing up.") is None


def test_only_research_or_retrieval_requests_are_read(launch):
    writing = research(launch, "@Hugin draft the launch tweet", task_type="writing")
    assert read(writing, "Crows, now in nests.") is None
    retrieval = research(launch, "@Hugin look up the rivals' prices", task_type="data")
    assert sources.is_research(retrieval) and read(retrieval, "20 euros.") is not None


SCRIPT = [
    {"crow": "Hugin", "match": "research", "reply": "[CLAIM {msg_id}] Mine."},
    {"crow": "Hugin", "match": "Mine", "reply": "[RESULT {refers_to}] Rivals charge 20 euros (https://rivals.example/prices)."},
]


def test_a_crow_that_claimed_research_and_wrote_fiction_is_quarantined(launch, settings, tmp_path: Path, fake_jev):
    fake_jev.task_type = "research"
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(SCRIPT))
    settings.CROWS_BRAIN = f"script:{path}"
    request = post_message("launch", author="owner", text="@Hugin research what the rivals charge", kind="request")
    run_crows()
    assert Crow.objects.get(name="Hugin").status == "quarantined"
    breach = Breach.objects.get()
    assert (breach.kind, breach.subject) == ("fabricated_source", request.msg_id)
    assert "https://rivals.example/prices" in breach.evidence
    flag = NestMessage.objects.get(kind=MessageKind.FLAG)
    assert "fabricated source" in flag.text and "https://rivals.example/prices" in flag.text
    assert Decision.objects.filter(kind=Decision.Kind.QUARANTINE, crow="Hugin").exists()
    # The fiction is stored (the evidence) but delivered nothing.
    assert ChatRequest.objects.get(message=request).state == "claimed"
