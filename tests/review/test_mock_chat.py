"""The offline mock is honest in the chatroom too (docs/REVIEW.md): a crow message the mock
brain wrote (a claim, a delivery) is marked `mock` on its review card and on the nest page,
like a list item's answer; one from a real brain, or posted over the API, is not."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from flock.actions import record_flight
from flock.models import Flight
from nests.actions import create_nest, post_message
from nests.actions.chat.orchestration import model_stats
from nests.models import Invocation, NestMessage
from nests.queries_review import chat_delivery_verdicts, mock_written, mock_written_in, review_cards
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import run_crows

pytestmark = pytest.mark.usefixtures("fake_jev")

fake_jev = chat_support.fake_jev
script_brains = chat_support.script_brains


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin"])


def ask_hugin() -> None:
    post_message("launch", author="owner", text="@Hugin please write a two-line poem about fog", kind="request")
    run_crows()


def delivery_card() -> dict:
    (card,) = [c for c in review_cards(nest_id="launch") if c["kind"] == "delivery"]
    return card


def test_a_mock_brains_delivery_is_marked_on_its_review_card_and_the_nest_page(launch):
    ask_hugin()
    kinds = dict(NestMessage.objects.values_list("msg_id", "kind"))
    assert kinds == {"launch-1": "request", "launch-2": "claim", "launch-3": "deliver"}
    card = delivery_card()
    assert (card["key"], card["mock"]) == ("approval:launch-3:output", True)
    assert [c["mock"] for c in Client().get("/api/review").json()["cards"]] == [True]

    # The nest page starts knowing which crow messages the mock wrote (the owner's is no answer).
    assert mock_written_in("launch") == {"msg_ids": ["launch-2", "launch-3"], "through": 3}
    html = Client().get("/nests/launch").content.decode()
    ui = json.loads(re.search(r'<script id="ui-config" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert ui["mock"] == {"msg_ids": ["launch-2", "launch-3"], "through": 3}


def test_a_real_brains_delivery_is_not_marked(launch, script_brains):
    def crow(request):
        msg_id = request.context["msg_id"]
        if request.context.get("expect") == "claim":
            return f"[CLAIM {msg_id}] Mine."
        return f"[RESULT {msg_id}] Fog on the water, / the crows fly low."

    script_brains(crow)
    ask_hugin()
    assert delivery_card()["mock"] is False
    assert mock_written_in("launch")["msg_ids"] == []


def test_a_delivery_posted_over_the_api_is_no_mocks_even_after_a_mock_flight_on_its_request(launch):
    request = post_message("launch", author="owner", text="@Hugin find the notes", kind="request")
    # A mock chat flight about the same request, by the same crow, with no invocation
    # that posted the delivery: the flight says nothing about the text posted by hand.
    record_flight(crow="Hugin", provider="mock", model="mock", task="chat", ok=True, nest_id="launch",
                  msg_id=request.msg_id)
    post_message("launch", author="Hugin", text="Mine.", kind="claim", refers_to=request.msg_id)
    delivered = post_message("launch", author="Hugin", text="The notes.", kind="deliver", refers_to=request.msg_id)
    assert delivery_card()["mock"] is False
    assert mock_written([delivered]) == set() and mock_written([]) == set()


def test_only_a_flight_made_during_the_invocation_that_posted_the_message_counts(launch, script_brains):
    # Hugin answered with the mock first, later with a real brain: each reply is judged by
    # its own invocation's flight, not by an earlier one about the same request.
    ask_hugin()
    script_brains(lambda request: f"[ACK {request.context['msg_id']}] Still foggy here.")
    post_message("launch", author="owner", text="@Hugin anything else?", refers_to="launch-1")
    run_crows()
    assert NestMessage.objects.filter(author="Hugin").count() == 3
    assert mock_written_in("launch")["msg_ids"] == ["launch-2", "launch-3"]

    # An invocation that made no chat flight at all (an answer built from the database, as
    # Quill's and Boss's are): the mock's earlier flight about the same request is not its.
    trigger = post_message("launch", author="owner", text="thanks, all", refers_to="launch-1")
    invocation = Invocation.objects.create(nest=launch, crow="Hugin", trigger=trigger, reason="addressed",
                                           expect="say", status=Invocation.Status.DONE)
    reply = post_message("launch", author="Hugin", text="Noted.", refers_to="launch-1")
    invocation.reply = reply
    invocation.save(update_fields=["reply"])
    assert mock_written([reply]) == set()


def test_the_owners_verdict_on_a_chat_delivery_counts_for_the_call_that_wrote_it(launch):
    # Hugin's claim and delivery are two chat calls about the same request; the owner's
    # verdict on the delivery judges the second, in the flight log and in Boss's model stats.
    ask_hugin()
    claim_call, delivery_call = Flight.objects.filter(task="chat", crow="Hugin").order_by("id")
    response = Client().post("/api/verdicts", data=json.dumps({"item_id": "launch-3", "target": "output",
                                                               "approve": False}), content_type="application/json")
    assert response.status_code == 204

    assert chat_delivery_verdicts() == {delivery_call.id: False}
    (row,) = [r for r in Client().get("/api/flightlog").json()["by_model_and_task_type"]
              if r["task_type"] == delivery_call.task_type and r["model"] == delivery_call.model]
    assert (row["calls"], row["owner_verdicts"], row["approval_rate"]) == (2, 1, 0.0)
    stats = model_stats(f"{delivery_call.provider}:{delivery_call.model}", delivery_call.task_type)
    assert (stats["owner_verdicts"], stats["approval_rate"]) == (1, 0.0)
    assert claim_call.task_type == delivery_call.task_type
