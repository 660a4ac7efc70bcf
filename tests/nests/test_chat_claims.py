"""Claims (docs/CHATROOM.md): solo/split, the first claim wins (409 over the
API, a review comment from a brain); conspiracy, several lenses in turn up to a cap."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from flock.errors import Conflict
from nests.actions import create_nest, post_message
from nests.actions.chat.claims import CONSPIRACY_CAP
from nests.models import ChatRequest, Claim, Invocation, NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import give_rights, make_trusted, run_crows

pytestmark = pytest.mark.usefixtures("fake_jev")

# Shared fixtures (tests/support/scripted_brain.py), bound here so pytest finds them.
fake_jev = chat_support.fake_jev
script_brains = chat_support.script_brains


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin", "Pepper", "Inky"])


def crow_script(request):
    """Claim when asked to claim, deliver when asked to deliver, in the bracket grammar."""
    msg_id = request.context["msg_id"]
    if request.context.get("expect") == "claim":
        return f"[CLAIM {msg_id}] {request.persona.name} takes it."
    if request.context.get("expect") == "deliver":
        return f"[RESULT {msg_id}] {request.persona.name}'s reading, lens: {request.context.get('lens', '-')}."
    return f"[ACK {msg_id}] ok"


def test_first_claim_wins_and_a_second_api_claim_is_refused(launch):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    post_message("launch", author="owner", text="find the notes", kind="request")
    post_message("launch", author="Hugin", text="Mine.", kind="claim", refers_to="launch-1")
    with pytest.raises(Conflict, match="already claimed by Hugin"):
        post_message("launch", author="Munin", text="Mine!", kind="claim", refers_to="launch-1")
    assert list(Claim.objects.values_list("crow", flat=True)) == ["Hugin"]


def test_a_claim_on_a_claim_message_counts_for_its_request(launch):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    post_message("launch", author="owner", text="find the notes", kind="request")
    post_message("launch", author="Hugin", text="Mine.", kind="claim", refers_to="launch-1")
    with pytest.raises(Conflict):
        post_message("launch", author="Munin", text="Mine!", kind="claim", refers_to="launch-2")


def test_the_database_itself_keeps_one_claim_per_solo_request(launch):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    post_message("launch", author="owner", text="find the notes", kind="request")
    post_message("launch", author="Hugin", text="Mine.", kind="claim", refers_to="launch-1")
    request = ChatRequest.objects.get()
    other = post_message("launch", author="Munin", text="just talk")
    with pytest.raises(IntegrityError), transaction.atomic():
        Claim.objects.create(request=request, message=other, crow="Munin", exclusive=True)


def test_a_brains_late_claim_becomes_a_review_comment(launch, script_brains, fake_jev):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    # Work in Hugin's role: taking work outside it unasked earns a role nudge (docs/GOVERNANCE.md, 4).
    fake_jev.task_type = "planning"
    script_brains(crow_script)
    post_message("launch", author="owner", text="@Munin find the notes", kind="request")
    # Hugin claims over the API before Munin's invocation runs.
    post_message("launch", author="Hugin", text="Got this one.", kind="claim", refers_to="launch-1")
    run_crows()
    munin = NestMessage.objects.get(author="Munin")
    assert munin.kind == "say" and munin.refers_to == "launch-1"
    assert list(Claim.objects.values_list("crow", flat=True)) == ["Hugin"]
    # A review comment does not invoke its author to deliver: only Hugin's claim does.
    reasons = list(Invocation.objects.order_by("id").values_list("crow", "reason"))
    assert reasons == [("Munin", "addressed"), ("Hugin", "claim_deliver")]
    assert NestMessage.objects.filter(author="Hugin", kind="deliver").exists()


def test_deliver_goes_back_to_whoever_requested(launch):
    give_rights("Munin")  # a regular may claim open requests (speaking rights)
    give_rights("Pepper", level=2)  # a trusted crow may open requests
    post_message("launch", author="owner", text="morning")
    post_message("launch", author="Pepper", text="can someone check the numbers", kind="request")
    claim = post_message("launch", author="Munin", text="Mine.", kind="claim", refers_to="launch-2")
    deliver = post_message("launch", author="Munin", text="All add up.", kind="deliver", refers_to="launch-2")
    assert claim.to == "Pepper" and deliver.to == "Pepper"
    assert ChatRequest.objects.get().state == "delivered"
    assert Claim.objects.get().delivered == deliver


def test_a_conspiracy_takes_distinct_lenses_one_after_another_up_to_the_cap(launch, fake_jev, script_brains):
    fake_jev.mode = "murder"
    for crow in ("Hugin", "Munin", "Pepper", "Inky"):
        make_trusted(crow, "writing", level=1)
    script_brains(crow_script)
    post_message("launch", author="owner", text="which launch date is best?", kind="request")
    assert ChatRequest.objects.get().mode == "conspiracy"
    run_crows()
    claims = list(Claim.objects.order_by("id"))
    assert len(claims) == CONSPIRACY_CAP == 3
    assert len({c.crow for c in claims}) == 3 and all(not c.exclusive for c in claims)
    assert len({c.lens for c in claims}) == 3 and all(c.lens for c in claims)
    # Sequential: each crow claims, delivers, then the next lens is invoked.
    kinds = [(m.author, m.kind) for m in NestMessage.objects.order_by("n")][1:]
    assert [k for _, k in kinds] == ["claim", "deliver"] * 3
    assert all(m.to == "owner" for m in NestMessage.objects.filter(kind__in=["claim", "deliver"]))
    assert ChatRequest.objects.get().state == "delivered"
    reasons = list(Invocation.objects.order_by("id").values_list("reason", flat=True))
    assert reasons == ["fit", "claim_deliver", "lens", "claim_deliver", "lens", "claim_deliver"]


def test_in_a_conspiracy_every_crow_s_claim_stands_once(launch, fake_jev):
    give_rights("Hugin", "Munin", "Pepper", "Inky")  # a regular may claim open requests (speaking rights)
    # docs/CHATROOM.md: in conspiracy mode every claim stands; the cap is how many lenses
    # dispatch invokes, not how many crows may offer one.
    fake_jev.mode = "murder"
    post_message("launch", author="owner", text="which launch date is best?", kind="request")
    for crow in ("Hugin", "Munin", "Pepper", "Inky"):
        post_message("launch", author=crow, text="My lens.", kind="claim", refers_to="launch-1")
    with pytest.raises(Conflict, match="already has a lens"):
        post_message("launch", author="Hugin", text="Again.", kind="claim", refers_to="launch-1")
    assert Claim.objects.count() == 4 > CONSPIRACY_CAP


def test_a_lens_claimed_after_the_others_delivered_reopens_the_request_until_it_delivers(launch, fake_jev):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    fake_jev.mode = "murder"
    post_message("launch", author="owner", text="which launch date is best?", kind="request")
    post_message("launch", author="Hugin", text="My lens.", kind="claim", refers_to="launch-1")
    post_message("launch", author="Hugin", text="Friday.", kind="deliver", refers_to="launch-1")
    assert ChatRequest.objects.get().state == "delivered"
    post_message("launch", author="Munin", text="Another lens.", kind="claim", refers_to="launch-1")
    assert ChatRequest.objects.get().state == "claimed"
    post_message("launch", author="Munin", text="Monday, for the press.", kind="deliver", refers_to="launch-1")
    assert ChatRequest.objects.get().state == "delivered"
