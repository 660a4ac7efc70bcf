"""Trust in the chatroom (docs/CHATROOM.md): a crow's delivery is judged like a list
item's output, through the same approvals and POST /api/verdicts."""

from __future__ import annotations

import json

import pytest

from nests.actions import create_nest, post_message
from nests.models import NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import make_trusted, run_crows
from trust.actions import record_owner_verdict, time_out_approval
from trust.models import Approval, Verdict
from trust.queries import trust_balance

pytestmark = pytest.mark.usefixtures("fake_jev")

fake_jev = chat_support.fake_jev
script_brains = chat_support.script_brains


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin"])


def deliver(n: int, crow: str = "Hugin") -> str:
    """The owner asks, the crow claims and delivers over the API; the deliver's msg_id."""
    # Addressed: a stranger speaks only when addressed (docs/CHATROOM.md, speaking rights).
    request = post_message("launch", author="owner", text=f"@{crow} find the notes, part {n}", kind="request")
    post_message("launch", author=crow, text="Mine.", kind="claim", refers_to=request.msg_id)
    return post_message("launch", author=crow, text=f"Notes part {n}.", kind="deliver", refers_to=request.msg_id).msg_id


def test_a_strangers_delivery_waits_for_the_owner_and_is_listed_in_state(launch, client, capture_events):
    with capture_events() as events:
        msg_id = deliver(1)
    # Posted as always, back to the requester; no verdict yet.
    assert NestMessage.objects.get(msg_id=msg_id).to == "owner"
    assert "verdict" not in events.names()
    approval = Approval.objects.get()
    assert (approval.item_id, approval.target, approval.nest_id, approval.list_id, approval.holders) == (
        msg_id, "output", "launch", "", ["Hugin"],
    )
    pending = client.get("/api/state").json()["pending_approvals"]
    assert [(p["item_id"], p["target"], p["nest_id"]) for p in pending] == [(msg_id, "output", "launch")]


def test_approvals_climb_the_ladder_and_a_trusted_crows_delivery_is_auto(launch, client, capture_events, settings):
    settings.CROWS_TRUST_STREAK = 3
    levels = []
    for n in range(6):
        msg_id = deliver(n)
        r = client.post("/api/verdicts", data=json.dumps({"item_id": msg_id, "target": "output", "approve": True}),
                        content_type="application/json")
        assert r.status_code == 204
        levels.append(trust_balance("Hugin", "writing")[0])
    assert levels == [0, 0, 1, 1, 1, 2]
    with capture_events() as events:
        msg_id = deliver(7)
    assert events.named("verdict") == [
        {"nest_id": "launch", "item_id": msg_id, "target": "output", "verdict": "auto",
         "ts": events.named("verdict")[0]["ts"]}
    ]
    assert not Approval.objects.filter(item_id=msg_id).exists()


def test_a_rejection_demotes_and_is_marked_in_the_room(launch, capture_events):
    make_trusted("Hugin", "writing", level=1)
    msg_id = deliver(1)
    with capture_events() as events:
        record_owner_verdict(msg_id, target="output", approve=False)
    assert events.names() == ["verdict", "trust.changed", "nest.message"]
    assert events.named("trust.changed")[0]["nest_id"] == "launch"
    assert events.named("trust.changed")[0]["from"] == 1 and events.named("trust.changed")[0]["to"] == 0
    mark = events.named("nest.message")[0]
    assert (mark["author"], mark["refers_to"]) == ("harness", msg_id) and "rejected" in mark["text"]


def test_a_delivery_nobody_judges_times_out_without_moving_trust(launch, settings):
    settings.CROWS_APPROVAL_TIMEOUT_S = 0
    msg_id = deliver(1)
    verdict = time_out_approval(msg_id, target="output")
    assert verdict is not None and verdict.verdict == Verdict.Value.TIMEOUT
    assert trust_balance("Hugin", "writing") == (0, 0)
    assert "counts as rejected" in NestMessage.objects.filter(author="harness").last().text


def test_a_brains_delivery_opens_an_approval_too(launch, script_brains):
    script_brains(lambda r: f"[CLAIM {r.context['msg_id']}] Mine." if r.context.get("expect") == "claim"
                  else f"[RESULT {r.context['msg_id']}] Done.")
    post_message("launch", author="owner", text="@Munin please summarise the notes", kind="request")
    run_crows()
    deliver_msg = NestMessage.objects.get(kind="deliver")
    assert Approval.objects.get().item_id == deliver_msg.msg_id
    assert Approval.objects.get().holders == ["Munin"]


def test_a_corrected_delivery_is_approved_with_the_owners_text_in_the_room_and_trust_unmoved(launch, capture_events):
    msg_id = deliver(1)
    with capture_events() as events:
        record_owner_verdict(msg_id, target="output", approve=True, edited_text="Notes part 1, with the dates fixed.")
    assert events.names() == ["verdict", "nest.message"]
    assert events.named("verdict")[0]["edited"] is True
    mark = events.named("nest.message")[0]
    assert mark["author"] == "harness" and "with the dates fixed" in mark["text"]
    assert trust_balance("Hugin", "writing") == (0, 0)
    assert NestMessage.objects.get(msg_id=msg_id).text == "Notes part 1."


def test_a_rejection_reason_is_said_in_the_room(launch, capture_events):
    msg_id = deliver(1)
    with capture_events() as events:
        record_owner_verdict(msg_id, target="output", approve=False, reason="Wrong quarter.")
    assert "The owner's reason: Wrong quarter." in events.named("nest.message")[0]["text"]


def test_an_overruled_auto_delivery_demotes_and_is_marked_in_the_room(launch, capture_events):
    from trust.actions import overrule_verdict

    make_trusted("Hugin", "writing", level=2)
    msg_id = deliver(1)
    assert Verdict.objects.get(item_id=msg_id).verdict == Verdict.Value.AUTO
    with capture_events() as events:
        overrule_verdict(msg_id, reason="It cites the wrong year.")
    # The overrule, the demotion it causes, then the room hears it, as for a rejection.
    assert events.names() == ["verdict.overruled", "trust.changed", "nest.message"]
    assert events.named("verdict.overruled")[0]["nest_id"] == "launch"
    mark = events.named("nest.message")[0]
    assert (mark["author"], mark["refers_to"], mark["kind"]) == ("harness", msg_id, "say")
    assert "overruled" in mark["text"] and "It cites the wrong year." in mark["text"]
    assert trust_balance("Hugin", "writing")[0] == 1
