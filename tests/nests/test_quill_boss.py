"""Quill, the owner's contact (status from the database, relays into nests) and Boss, the
chief of staff (hatches crows, creates nests, retires idle crows), with their events."""

from __future__ import annotations

import json

import pytest

from flock.actions import hatch_crow, retire_crow
from flock.errors import BadInput, Conflict, NotFound
from flock.models import Crow
from nests.actions import create_nest, post_message
from nests.actions.chat.boss import Order, parse_order
from nests.actions.chat.quill import parse_relay
from nests.actions.chat.status_question import is_status_question
from nests.models import ChatRequest, Invocation, Nest, NestMessage
from nests.queries import trust_level
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import give_rights, run_crows

pytestmark = pytest.mark.usefixtures("fake_jev")

# Shared fixtures (tests/support/scripted_brain.py), bound here so pytest finds them.
fake_jev = chat_support.fake_jev


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin", "Inky"])


def last(nest_id: str, author: str) -> NestMessage:
    return NestMessage.objects.filter(nest__nest_id=nest_id, author=author).order_by("-n").first()


# --- Quill ------------------------------------------------------------------------------


@pytest.fixture
def busy_launch(launch, settings):
    """Three requests built over the API with the crows switched off: one delivered, one
    claimed and not delivered, one nobody has touched."""
    settings.CROWS_EXCHANGES_PER_TURN = 0
    post_message("launch", author="owner", text="@Hugin find the competitor prices", kind="request")
    post_message("launch", author="Hugin", text="Mine.", kind="claim", refers_to="launch-1")
    post_message("launch", author="Hugin", text="Three tiers, 9 to 49.", kind="deliver", refers_to="launch-1")
    post_message("launch", author="owner", text="@Munin pull the October signups", kind="request")
    post_message("launch", author="Munin", text="On it.", kind="claim", refers_to="launch-4")
    post_message("launch", author="owner", text="someone draft the tweet", kind="request")
    settings.CROWS_EXCHANGES_PER_TURN = 12
    return launch


@pytest.mark.parametrize(
    "text, asks",
    [
        ("what's happening?", True), ("@Quill status?", True), ("Where are we on the launch", True),
        ("what is still open?", True), ("any updates?", True),
        ("draft a status update for the team", False), ("@Quill draft the tweet", False),
    ],
)
def test_quill_tells_a_status_question_from_work(text, asks):
    assert is_status_question(text) is asks


@pytest.mark.parametrize(
    "text, relay",
    [
        ("ask the launch nest to draft the tweet", ("launch", "draft the tweet")),
        ("@Quill please tell the Launch nest to check the pricing page.", ("Launch", "check the pricing page")),
        ("relay to launch: book the venue", ("launch", "book the venue")),
        ("in the launch nest, plan the demo", ("launch", "plan the demo")),
        ("draft the tweet", None),
    ],
)
def test_quill_reads_a_relay(launch, text, relay):
    assert parse_relay(text) == relay


def test_quill_answers_whats_happening_from_the_nest_itself(busy_launch):
    question = post_message("launch", author="owner", text="what's happening?")
    assert Invocation.objects.get(trigger=question).crow == "Quill"
    run_crows()
    reply = last("launch", "Quill")
    assert reply.refers_to == question.msg_id and reply.to == "owner"
    text = reply.text
    assert "launch-1 from owner to @Hugin" in text
    assert "Hugin claimed it (launch-2), delivered launch-3, waiting for your approval" in text
    assert "Munin claimed it (launch-5), not delivered yet" in text
    assert "launch-6 from owner" in text and "still open: nobody has claimed it" in text
    assert text.rstrip().endswith("Still open: launch-4, launch-6.")


def test_quills_answer_leaves_out_the_question_and_counts_a_rejected_delivery_as_open(busy_launch, client):
    response = client.post("/api/verdicts", data=json.dumps({"item_id": "launch-3", "target": "output", "approve": False,
                                                             "reason": "wrong currency"}), content_type="application/json")
    assert response.status_code == 204
    question = post_message("launch", author="owner", text="Quill, what is still open?", kind="request")
    run_crows()
    text = last("launch", "Quill").text
    assert "Hugin claimed it (launch-2), delivered launch-3, which you rejected" in text
    assert f"{question.msg_id} from owner" not in text
    assert text.rstrip().endswith("Still open: launch-1, launch-4, launch-6.")


def test_whats_happening_is_quills_even_when_jev_hears_a_request(busy_launch, monkeypatch):
    # Jev sure it is a request, and a crow that fits it well: still Quill's to answer.
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: 0.9)
    question = post_message("launch", author="owner", text="What's happening?", kind="request")
    assert question.kind == "request"
    assert [(i.crow, i.reason) for i in Invocation.objects.filter(trigger=question)] == [("Quill", "quill_default")]
    run_crows()
    reply = last("launch", "Quill")
    assert reply.refers_to == question.msg_id and reply.to == "owner" and "Still open:" in reply.text
    assert ChatRequest.objects.get(message=question).state == "delivered"
    # Nobody took the question for work.
    assert not NestMessage.objects.filter(nest__nest_id="launch", refers_to=question.msg_id).exclude(author="Quill").exists()


def test_quill_in_its_direct_chat_summarises_the_nest_named(busy_launch):
    create_nest("Ops", crows=["Pepper"])
    post_message("dm-quill", author="owner", text="What's going on in launch?")
    run_crows()
    text = last("dm-quill", "Quill").text
    assert "Launch (launch):" in text and "Still open: launch-4, launch-6." in text
    assert "Ops" not in text


def test_quill_relays_an_owner_request_into_a_nest_and_carries_the_result_back(launch, monkeypatch):
    monkeypatch.setattr("nests.crow_fit.profile", lambda crow: crow.name)
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: {"Inky": 0.4}.get(profile, 0.1))
    asked = post_message("dm-quill", author="owner", text="ask the launch nest to draft the tweet", kind="request")
    run_crows()
    relayed = NestMessage.objects.get(nest__nest_id="launch", author="Quill")
    assert relayed.kind == "request" and relayed.to == "Inky" and relayed.text == "@Inky, from @owner: draft the tweet"
    request = ChatRequest.objects.get(message=relayed)
    assert request.requester == "owner" and request.relayed_from == asked.msg_id
    # Inky, a stranger, answers because Quill addressed it; the result goes to the owner.
    inky = list(NestMessage.objects.filter(nest__nest_id="launch", author="Inky").order_by("n"))
    assert [(m.kind, m.to) for m in inky] == [("claim", "owner"), ("deliver", "owner")]
    replies = list(NestMessage.objects.filter(nest__nest_id="dm-quill", author="Quill").order_by("n"))
    assert replies[0].text.startswith(f"Relayed to Launch as {relayed.msg_id}; asked @Inky")
    assert replies[1].kind == "deliver" and replies[1].refers_to == asked.msg_id and replies[1].to == "owner"
    assert replies[1].text.startswith(f"From Launch: @Inky delivered {inky[1].msg_id}.")
    assert ChatRequest.objects.get(message=asked).state == "relayed"
    assert set(Invocation.objects.values_list("crow", flat=True)) == {"Quill", "Inky"}


@pytest.mark.parametrize(
    "text, kind",
    [
        *[(text, kind) for text in ("Ask the ops nest to draft the incident report for the outage",
                                    "Relay to ops: please draft the incident report")
          for kind in (None, "say", "request")],
        ("In the ops nest, check the backup logs for errors", "request"),
    ],
)
def test_an_unaddressed_relay_from_another_room_goes_to_quill_whatever_jev_read(launch, text, kind):
    create_nest("Ops", crows=["Rook", "Pepper"])
    asked = post_message("launch", author="owner", text=text, kind=kind)
    assert Invocation.objects.get(trigger=asked).crow == "Quill"
    run_crows()
    relayed = NestMessage.objects.get(nest__nest_id="ops", author="Quill", kind="request")
    assert ChatRequest.objects.get(message=relayed).relayed_from == asked.msg_id
    said = [m.text for m in NestMessage.objects.filter(nest__nest_id="launch", author="Quill").order_by("n")]
    assert said[0].startswith("Relayed to Ops as ") and said[-1].startswith("From Ops: @")


@pytest.mark.parametrize(
    "text, kind",
    [("In the ops nest, Rook did great work today", "say"), ("tell the nest to wrap up soon", "request")],
)
def test_a_remark_about_another_nest_or_this_room_is_no_relay(launch, text, kind):
    create_nest("Ops", crows=["Rook", "Pepper"])
    asked = post_message("launch", author="owner", text=text, kind=kind)
    invoked = Invocation.objects.filter(trigger=asked).first()
    assert invoked is None or invoked.reason != "quill_default"
    run_crows()
    assert not NestMessage.objects.filter(nest__nest_id="ops", author="Quill").exists()


def test_quill_says_so_when_the_nest_does_not_exist(launch):
    post_message("dm-quill", author="owner", text="ask the moon nest to draft the tweet", kind="request")
    run_crows()
    assert "can't find a nest called “moon”" in last("dm-quill", "Quill").text


# --- Boss -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, order",
    [
        ("@Boss hatch a crow named Wren who is good at data", Order("hatch", "Wren", strength="data")),
        ("Boss, please hatch one called wren, good at spreadsheets and charts.",
         Order("hatch", "wren", strength="spreadsheets and charts")),
        ("@Boss hatch a crow named Jay for research using openai:gpt-4o-mini",
         Order("hatch", "Jay", strength="research", model="openai:gpt-4o-mini")),
        ("@Boss make a nest called Launch Copy with Pepper and @inky", Order("nest", "Launch Copy", crows=("Pepper", "inky"))),
        ("@Boss create a nest named Ops with Rook, Pepper & Munin.", Order("nest", "Ops", crows=("Rook", "Pepper", "Munin"))),
        ("@Boss retire Soot", Order("retire", "Soot")),
        ("@Boss how are you?", None),
    ],
)
def test_boss_reads_the_owners_orders(text, order):
    assert parse_order(text) == order


@pytest.mark.parametrize(
    "text, words",
    [
        ("@Boss hatch a crow named Wrén who is good at writing", "Can't hatch “Wrén”: a crow's name is"),
        ("@Boss hatch a crow named " + "A" * 41 + " who is good at data", "Can't hatch “" + "A" * 41),
        ("@Boss hatch a crow named Robert'); DROP TABLE crows;-- who is good at data", "Can't hatch “Robert')”"),
        ("@Boss hatch a crow named 9lives", "Can't hatch “9lives”"),
        ("@Boss hatch a crow named Xan who is good at data using gpt-4o", "Which provider serves gpt-4o?"),
        ("@Boss switch Hugin to gpt-4o", "Say “switch Hugin to openai:gpt-4o”"),
        ("@Boss please hatch two crows named Tic and Tac", "One crow at a time"),
        ("@Boss make a nest called Empty", "Which crows should be in it?"),
        ("@Boss hatch a crow", "Name it and say what it is good at"),
    ],
)
def test_boss_says_what_it_cannot_carry_out_as_given_and_changes_nothing(db, capture_events, text, words):
    with capture_events() as events:
        post_message("todo", author="owner", text=text)
        run_crows()
    assert events.named("crow.hatched") == [] and events.named("crow.updated") == []
    assert events.named("nest.created") == []
    reply = last("todo", "Boss")
    assert words in reply.text and "delivered" not in reply.text, reply.text
    assert not NestMessage.objects.filter(author="Boss", kind="deliver").exists()


@pytest.mark.parametrize(
    "text, order",
    [
        ("@Boss hatch a crow named Wren on anthropic:claude-sonnet-4@20250514 who is good at data",
         Order("hatch", "Wren", strength="data", model="anthropic:claude-sonnet-4@20250514")),
        ("@Boss hatch a crow named Kay who is good at running k8s clusters",
         Order("hatch", "Kay", strength="running k8s clusters")),
        ("@Boss hatch a crow named Kay who is good at working with s3 buckets",
         Order("hatch", "Kay", strength="working with s3 buckets")),
        ("@Boss hatch a crow named Ode who is good at verse using haiku forms",
         Order("hatch", "Ode", strength="verse using haiku forms")),
        ("@Boss move Rook to ops2", None),
    ],
)
def test_boss_reads_versions_and_does_not_take_ordinary_words_for_models(text, order):
    assert parse_order(text) == order


def test_a_quoted_name_is_the_name(db):
    assert parse_order("@Boss hatch a crow named “Wren” who is good at data") == Order("hatch", "Wren", strength="data")


def test_boss_hatches_a_crow_on_the_owners_word(db, client, capture_events):
    with capture_events() as events:
        post_message("todo", author="owner", text="@Boss hatch a crow named Wren who is good at data")
        run_crows()
    (hatched,) = events.named("crow.hatched")
    assert hatched == {
        "crow": "Wren", "epithet": "the Fledgling", "strength": "data", "model": "mock",
        "task_types": ["writing"], "trust": 0, "hatched_by": "Boss", "ts": hatched["ts"],
    }
    wren = Crow.objects.get(name="Wren")
    assert (wren.role, wren.status, wren.in_roster, wren.hatched_by) == ("worker", "active", True, "Boss")
    assert all(trust_level("Wren", t) == 0 for t in ("data", "writing", "chat"))
    reply = last("todo", "Boss")
    assert "Hatched @Wren" in reply.text and reply.to == "owner" and reply.refers_to == "todo-1"
    assert "Wren" in [c["name"] for c in client.get("/api/crows").json()]
    post_message("dm-wren", author="owner", text="hello Wren")
    run_crows()
    assert last("dm-wren", "Wren") is not None


def test_an_order_boss_carries_out_closes_the_owners_request(db, fake_jev):
    fake_jev.kinds = {"retire": "request"}
    order = post_message("todo", author="owner", text="@Boss retire Soot")
    assert ChatRequest.objects.get(message=order).state == "open"
    run_crows()
    assert ChatRequest.objects.get(message=order).state == "delivered"


def test_boss_hatching_a_taken_name_says_why_not(db, capture_events):
    with capture_events() as events:
        post_message("todo", author="owner", text="@Boss hatch a crow named hugin who is good at data")
        run_crows()
    assert events.named("crow.hatched") == []
    assert "a crow named Hugin already exists" in last("todo", "Boss").text


def test_boss_creates_a_nest_with_its_members(db, capture_events):
    with capture_events() as events:
        post_message("dm-boss", author="owner", text="make a nest called Ops with rook and Pepper")
        run_crows()
    (created,) = events.named("nest.created")
    assert created["nest_id"] == "ops" and created["crows"] == ["Rook", "Pepper"] and created["created_by"] == "Boss"
    assert Nest.objects.get(nest_id="ops").created_by == "Boss"
    assert "Nest Ops (ops) is up with Rook, Pepper" in last("dm-boss", "Boss").text


def test_boss_retires_an_idle_crow(launch, capture_events):
    with capture_events() as events:
        post_message("launch", author="owner", text="@Boss retire Munin")
        run_crows()
    (retired,) = events.named("crow.retired")
    assert retired["crow"] == "Munin" and retired["retired_by"] == "Boss" and "launch-1" in retired["reason"]
    assert Crow.objects.get(name="Munin").status == "retired"
    assert "Retired Munin" in last("launch", "Boss").text
    post_message("launch", author="owner", text="@Munin are you there?")
    assert not Invocation.objects.filter(crow="Munin").exists()


def test_boss_will_not_retire_a_crow_holding_a_claim(launch, settings, capture_events):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    settings.CROWS_EXCHANGES_PER_TURN = 0
    post_message("launch", author="owner", text="find the notes", kind="request")
    post_message("launch", author="Hugin", text="Mine.", kind="claim", refers_to="launch-1")
    settings.CROWS_EXCHANGES_PER_TURN = 12
    with capture_events() as events:
        post_message("launch", author="owner", text="@Boss retire Hugin")
        run_crows()
    assert events.named("crow.retired") == []
    assert "still holds launch-1" in last("launch", "Boss").text


def test_boss_will_not_retire_quill(db):
    post_message("todo", author="owner", text="@Boss retire Quill")
    run_crows()
    assert "cannot be retired" in last("todo", "Boss").text
    assert Crow.objects.get(name="Quill").status == "active"


def test_hatch_and_retire_guard_their_inputs(db):
    for bad in ("", "9lives", "x" * 41, "owner", "has space"):
        with pytest.raises(BadInput):
            hatch_crow(bad, strength="data", hatched_by="Boss")
    with pytest.raises(BadInput):
        hatch_crow("Wren", strength="", hatched_by="Boss")
    with pytest.raises(BadInput):
        hatch_crow("Wren", strength="data", hatched_by="Boss", model="gpt-4")
    with pytest.raises(Conflict):
        hatch_crow("PEPPER", strength="data", hatched_by="Boss")
    with pytest.raises(NotFound):
        retire_crow("Nobody", retired_by="Boss")
    retire_crow("Soot", retired_by="Boss")
    with pytest.raises(BadInput, match="already retired"):
        retire_crow("Soot", retired_by="Boss")
    with pytest.raises(Conflict):
        hatch_crow("Soot", strength="poems", hatched_by="Boss")


def test_the_new_events_are_listed_in_the_capabilities(client, db):
    capabilities = client.get("/api/state").json()["capabilities"]
    assert {"crow.hatched", "crow.retired", "nest.created", "nest.message"} <= set(capabilities)


def test_quill_covers_only_the_nest_a_status_question_names(busy_launch):
    create_nest("Ops", crows=["Rook", "Pepper"])
    post_message("ops", author="owner", text="@Rook check the backup logs please", kind="request")
    run_crows()
    post_message("dm-quill", author="owner", text="what's going on in launch?")
    run_crows()
    text = last("dm-quill", "Quill").text
    assert "Launch (launch):" in text and "Ops (ops)" not in text


def test_quills_status_answer_mentions_the_running_debate(launch):
    from flock import worker
    from nests.models import Debate

    post_message("launch", author="owner", text="@Hugin and @Munin, debate this: tabs or spaces? One round.")
    while not Debate.objects.filter(cued="Hugin").exists():
        assert worker.run_pending(max_tasks=1) == 1
    asked = post_message("launch", author="owner", text="Hold on, what is happening here?")
    while not NestMessage.objects.filter(author="Quill", refers_to=asked.msg_id).exists():
        assert worker.run_pending(max_tasks=1) == 1
    text = NestMessage.objects.get(author="Quill", refers_to=asked.msg_id).text
    assert "Debate debate-1 (Hugin vs Munin)" in text and "round 1 of 1" in text and "Nothing is open" not in text


def test_boss_and_quills_fixed_answers_are_the_kind_their_header_says_whatever_jev_reads(db, fake_jev):
    # Jev would read "Can't do that: …" as a delivery; Boss's answer is an [ACK], a say.
    fake_jev.kinds = {"can't do that": "deliver", "name it": "decline"}
    post_message("todo", author="owner", text="@Boss retire Quill")
    post_message("todo", author="owner", text="@Boss hatch a crow")
    run_crows()
    answers = NestMessage.objects.filter(author="Boss").order_by("n")
    assert [(m.kind, m.tagged_by) for m in answers] == [("say", "header"), ("say", "header")]
