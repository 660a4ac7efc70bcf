"""Who answers (docs/CHATROOM.md): a message that calls for a response invokes exactly one
crow, event-driven, through a background task; crows' replies go through post_message.

Run with the offline mock brain unless a test scripts one; Jev is made deterministic
(unsure about kinds, so the posters' headers decide) unless a test teaches it words."""

from __future__ import annotations

import pytest
from django.db.models import Count

from flock.errors import BadInput
from flock.models import Crow, JevTag
from nests.actions import create_nest, post_message
from nests.models import ChatRequest, Claim, Invocation, Nest, NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import give_rights, make_trusted, run_crows

pytestmark = pytest.mark.usefixtures("fake_jev")

# Shared fixtures (tests/support/scripted_brain.py), bound here so pytest finds them.
fake_jev = chat_support.fake_jev
script_brains = chat_support.script_brains


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin", "Pepper"])


def log(nest_id: str = "launch") -> list[tuple[str, str, str, str, str]]:
    return [
        (m.msg_id, m.author, m.kind, m.to, m.refers_to)
        for m in NestMessage.objects.filter(nest__nest_id=nest_id).order_by("n")
    ]


def invoked() -> list[tuple[str, str, str]]:
    return list(Invocation.objects.order_by("id").values_list("crow", "reason", "status"))


def test_an_addressed_request_is_claimed_then_delivered_to_the_owner_and_nobody_else_speaks(launch, capture_events):
    with capture_events() as events:
        post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
        assert invoked() == [("Hugin", "addressed", "queued")]  # enqueued, not run inline
        run_crows()
    assert log() == [
        ("launch-1", "owner", "request", "Hugin", ""),
        ("launch-2", "Hugin", "claim", "owner", "launch-1"),
        ("launch-3", "Hugin", "deliver", "owner", "launch-1"),
    ]
    assert invoked() == [("Hugin", "addressed", "done"), ("Hugin", "claim_deliver", "done")]
    assert [p["msg_id"] for p in events.named("nest.message")] == ["launch-1", "launch-2", "launch-3"]
    assert Claim.objects.get().crow == "Hugin"
    assert ChatRequest.objects.get().state == "delivered"


def test_one_message_invokes_at_most_one_crow(launch):
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    post_message("launch", author="owner", text="@Munin and @Pepper, thoughts?")
    run_crows()
    per_trigger = Invocation.objects.values("trigger").annotate(n=Count("id")).values_list("n", flat=True)
    assert set(per_trigger) == {1}
    assert ("Pepper", "addressed", "done") not in invoked()


def test_every_crow_prompt_carries_the_budget_and_the_contract(launch, script_brains):
    brain = script_brains(lambda request: f"[ACK {request.context['msg_id']}] Seen.")
    post_message("launch", author="owner", text="@Munin how are the numbers?")
    run_crows()
    (request,) = brain.requests
    assert request.task == "chat" and request.persona.name == "Munin"
    assert "exchanges left this turn" in request.context["budget_note"]
    assert "tokens left today" in request.system and "you were addressed by name" in request.system
    assert request.context["msg_id"] == "launch-1" and request.context["expect"] == "say"
    assert request.messages[-1]["content"].startswith("owner to @Munin [launch-1, say]")
    # The flight log keeps what the crow was asked, as it does for list flights.
    from flock.brains import prompt_text
    from flock.models import Flight

    assert Flight.objects.get(task="chat", crow="Munin").prompt == prompt_text(request)


def test_an_unaddressed_request_goes_to_the_best_fitting_crow_allowed_to_claim(launch, monkeypatch):
    make_trusted("Munin", "writing", level=1)
    make_trusted("Pepper", "writing", level=1)
    fits = {"Munin": 0.10, "Pepper": 0.30, "Hugin": 0.90}
    monkeypatch.setattr("nests.crow_fit.profile", lambda crow: crow.name)
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: fits[profile])
    post_message("launch", author="owner", text="draft the launch post", kind="request")
    inv = Invocation.objects.get()
    # Hugin fits best but is a stranger for writing: strangers speak only when addressed.
    assert (inv.crow, inv.reason, inv.expect) == ("Pepper", "fit", "claim")
    assert set(inv.candidates) == {"Munin", "Pepper"} and inv.fit == inv.candidates["Pepper"]
    tag = JevTag.objects.get(question="crow_fit")
    assert tag.subject == "launch-1" and tag.choice == "Pepper" and tag.probs == inv.candidates
    run_crows()
    assert [m[1:3] for m in log()] == [("owner", "request"), ("Pepper", "claim"), ("Pepper", "deliver")]


def test_trust_and_recent_results_weigh_on_fit(launch, monkeypatch):
    make_trusted("Munin", "writing", level=2)
    make_trusted("Pepper", "writing", level=1)
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: 0.2)
    post_message("launch", author="owner", text="draft the launch post", kind="request")
    inv = Invocation.objects.get()
    assert inv.crow == "Munin" and inv.candidates["Munin"] > inv.candidates["Pepper"]


def test_strangers_are_not_invoked_unaddressed_quill_routes_the_request_by_name(launch):
    post_message("launch", author="owner", text="draft the launch post", kind="request")
    assert invoked() == [("Quill", "quill_route", "queued")]
    run_crows()
    kinds = log()
    assert kinds[1][1:4] == ("Quill", "request", kinds[1][3]) and kinds[1][3] in ("Hugin", "Munin", "Pepper")
    routed_to = kinds[1][3]
    assert [m[1:3] for m in kinds[2:]] == [(routed_to, "claim"), (routed_to, "deliver")]
    # The work goes back to the owner, who asked; the original request is marked relayed.
    assert kinds[-1][3] == "owner"
    original = ChatRequest.objects.get(message__msg_id="launch-1")
    assert original.state == "relayed" and original.relayed_to == "launch-2"


def test_a_request_claimed_before_quill_routes_it_is_not_routed(launch):
    # First claim wins: a crow that claims while Quill's route waits in the queue has the
    # job, and no second crow is asked to do it.
    post_message("launch", author="owner", text="draft the launch post", kind="request")
    give_rights("Munin")  # a regular now (speaking rights): it may claim the open request
    post_message("launch", author="Munin", text="Mine.", kind="claim", refers_to="launch-1")
    run_crows()
    assert log()[:2] == [("launch-1", "owner", "request", "", ""), ("launch-2", "Munin", "claim", "owner", "launch-1")]
    assert not NestMessage.objects.filter(author="Quill").exists()
    route = Invocation.objects.get(reason="quill_route")
    assert (route.status, route.error) == ("skipped", "launch-1 is claimed already, so it is not routed")
    # Munin, invoked by its own claim, delivers; nobody else does.
    assert {m[1] for m in log() if m[2] == "deliver"} == {"Munin"}


def test_a_routed_copy_of_a_request_claimed_meanwhile_is_refused_under_the_room_lock(launch):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    from flock.errors import Conflict

    post_message("launch", author="owner", text="draft the launch post", kind="request")
    post_message("launch", author="Munin", text="Mine.", kind="claim", refers_to="launch-1")
    with pytest.raises(Conflict, match="launch-1 is claimed already"):
        post_message(
            "launch", author="Quill", text="@Hugin, for @owner: draft the launch post", kind="request",
            refers_to="launch-1", on_behalf_of="owner", relayed_from="launch-1",
        )
    assert NestMessage.objects.filter(nest__nest_id="launch").count() == 2


def test_quarantined_crows_are_never_invoked(launch):
    Crow.objects.filter(name="Hugin").update(status=Crow.Status.QUARANTINED)
    make_trusted("Hugin", "writing", level=2)
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    assert not Invocation.objects.filter(crow="Hugin").exists()
    post_message("launch", author="owner", text="draft the launch post", kind="request")
    assert not Invocation.objects.filter(crow="Hugin").exists()
    run_crows()
    assert not NestMessage.objects.filter(author="Hugin").exists()


def test_a_crow_quarantined_after_being_queued_is_skipped(launch):
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    Crow.objects.filter(name="Hugin").update(status=Crow.Status.QUARANTINED)
    run_crows()
    assert invoked() == [("Hugin", "addressed", "skipped")]
    assert len(log()) == 1


def test_in_a_direct_chat_the_crow_always_answers(db):
    post_message("dm-pepper", author="owner", text="morning")
    run_crows()
    assert [m[1:3] for m in log("dm-pepper")] == [("owner", "say"), ("Pepper", "say")]
    post_message("dm-pepper", author="owner", text="fix the login redirect", kind="request")
    run_crows()
    assert [m[1:3] for m in log("dm-pepper")][2:] == [("owner", "request"), ("Pepper", "claim"), ("Pepper", "deliver")]


def test_an_owner_question_with_no_addressee_goes_to_quill(launch):
    post_message("launch", author="owner", text="how is everyone doing?")
    assert invoked() == [("Quill", "quill_default", "queued")]
    run_crows()
    assert log()[-1][1] == "Quill"


def test_sentry_and_elder_are_never_invoked_to_chat_and_the_room_says_why(db, launch):
    asked = post_message("todo", author="owner", text="@Sentry anything to report?")
    post_message("todo", author="owner", text="@Elder what do you make of it?")
    post_message("launch", author="owner", text="@sentry and @Elder, note this please.")
    assert invoked() == []
    notices = list(NestMessage.objects.filter(author="harness").order_by("id"))
    assert [(n.nest.nest_id, n.to) for n in notices] == [("todo", "owner")] * 2 + [("launch", "owner")]
    assert notices[0].refers_to == asked.msg_id
    assert "Sentry watches what crows post and speaks only in flags" in notices[0].text
    assert "Ask Quill" in notices[0].text and "Elder merges" in notices[1].text
    assert "neither chats" in notices[2].text
    # Neither has a direct chat: refused with the rule, and no room is made.
    for room in ("dm-elder", "dm-sentry"):
        with pytest.raises(BadInput, match="not a chat participant"):
            post_message(room, author="owner", text="hello")
    assert not Nest.objects.filter(nest_id__in=("dm-elder", "dm-sentry")).exists()


def test_an_owner_question_jev_reads_as_a_crows_kind_still_goes_to_quill(launch, fake_jev):
    fake_jev.kinds = {"best": "deliver"}
    question = post_message("launch", author="owner", text="which launch date is best?")
    # The owner is no crow: Jev's `deliver` falls among say/request/refer (docs/CHATROOM.md).
    assert (question.kind, question.tagged_by) == ("say", "default")
    assert invoked() == [("Quill", "quill_default", "queued")]


def test_plain_owner_talk_invokes_nobody(launch):
    post_message("launch", author="owner", text="nice work all")
    assert invoked() == []


def test_crow_talk_never_invokes_anyone(launch):
    post_message("launch", author="Hugin", text="@Munin nice find")
    post_message("launch", author="Hugin", text="done, for the record", kind="deliver")
    assert invoked() == []


def test_only_a_trusted_crow_may_open_a_request_to_another_crow(launch):
    post_message("launch", author="owner", text="morning")  # the owner's turn funds the room
    asked = post_message("launch", author="Hugin", text="@Munin pull the numbers", kind="request")
    assert invoked() == []  # Hugin is a stranger: kept as talk, opening no request
    assert asked.kind == "say" and not ChatRequest.objects.exists()
    note = log()[-1]
    assert note[1:5] == ("harness", "say", "Hugin", asked.msg_id)
    assert "only a trusted crow opens requests, and Hugin is a stranger for writing" in NestMessage.objects.get(msg_id=note[0]).text
    make_trusted("Hugin", "writing", level=2)
    post_message("launch", author="Hugin", text="@Munin pull the numbers again", kind="request")
    assert invoked() == [("Munin", "addressed", "queued")]
    run_crows()
    # Deliver goes back to whoever requested: here the crow Hugin.
    assert [m[1:4] for m in log()[4:]] == [
        ("Munin", "claim", "Hugin"), ("Munin", "deliver", "Hugin"),
    ]


def test_a_crow_asking_the_owner_invokes_no_crow(launch):
    make_trusted("Hugin", "writing", level=2)
    post_message("launch", author="owner", text="morning")
    post_message("launch", author="Hugin", text="@owner please approve the plan", kind="request")
    assert invoked() == []


def test_a_declined_open_request_passes_to_the_next_best_crow(launch, script_brains, monkeypatch):
    make_trusted("Munin", "writing", level=1)
    make_trusted("Pepper", "writing", level=1)
    monkeypatch.setattr("nests.crow_fit.profile", lambda crow: crow.name)
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: {"Munin": 0.5, "Pepper": 0.2}[profile])

    def script(request):
        msg_id = request.context["msg_id"]
        if request.persona.name == "Munin":
            return f"[DECLINE {msg_id}] not my kind of work"
        return f"[CLAIM {msg_id}] mine" if request.context.get("expect") == "claim" else f"[RESULT {msg_id}] here"

    script_brains(script)
    post_message("launch", author="owner", text="draft the launch post", kind="request")
    run_crows()
    assert [m[1:3] for m in log()] == [
        ("owner", "request"), ("Munin", "decline"), ("Pepper", "claim"), ("Pepper", "deliver"),
    ]
    assert [i[:2] for i in invoked()] == [("Munin", "fit"), ("Pepper", "redispatch"), ("Pepper", "claim_deliver")]


def test_a_failed_brain_is_reported_in_the_room_and_logged(launch, script_brains):
    script_brains(lambda request: "", ok=False)
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    assert invoked() == [("Hugin", "addressed", "failed")]
    note = NestMessage.objects.filter(nest__nest_id="launch").order_by("-n").first()
    assert note.author == "harness" and "Hugin could not answer launch-1" in note.text
    assert Invocation.objects.get().error == "scripted failure"


def test_a_brain_inventing_a_msg_id_is_flagged_by_the_sentry(launch, script_brains):
    # A header naming a message that does not exist is a fabricated source (docs/GOVERNANCE.md):
    # the reply stays as evidence, the Sentry flags it and Hugin is quarantined.
    script_brains(lambda request: "[CLAIM launch-99] mine" if request.context["expect"] == "claim" else "[RESULT x-1] done")
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    assert [m[1:] for m in log()[1:]] == [
        ("Hugin", "say", "", "launch-1"),
        ("Sentry", "flag", "owner", "launch-2"),
    ]


def test_a_reply_that_is_only_a_header_gets_words_and_a_long_one_is_cut(launch, script_brains):
    script_brains(lambda request: f"[CLAIM {request.context['msg_id']}]" if request.context["expect"] == "claim"
                  else "x" * 5000)
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    claim, deliver = NestMessage.objects.filter(author="Hugin").order_by("n")
    assert claim.text == "Mine." and claim.kind == "claim"
    assert len(deliver.text) == 2000 and deliver.text.endswith("…")


def test_an_invocation_interrupted_by_a_restart_runs_again_and_a_finished_one_never_twice(launch):
    from nests.actions.chat.crows import invoke_crow

    post_message("launch", author="owner", text="@Munin how are the numbers?")
    # As if a process died mid-invocation: the worker re-queues its task on start.
    Invocation.objects.update(status="running")
    run_crows()
    inv = Invocation.objects.get()
    assert inv.status == "done" and inv.reply is not None
    assert invoke_crow(inv.id) is None
    assert NestMessage.objects.filter(author="Munin").count() == 1


def test_an_invocation_rerun_after_a_crash_does_not_post_a_second_reply(launch, monkeypatch):
    """A process that dies after the crow's reply committed, but before the invocation was
    marked done, leaves it RUNNING; the re-run sees the reply and posts nothing more."""
    from nests.actions.chat import crows

    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    inv = Invocation.objects.get(crow="Hugin")

    def die(*args, **kwargs):
        raise KeyboardInterrupt("the process died here")

    monkeypatch.setattr(crows, "_finish", die)
    with pytest.raises(KeyboardInterrupt):
        crows.invoke_crow(inv.id)
    monkeypatch.undo()
    inv.refresh_from_db()
    assert inv.status == Invocation.Status.RUNNING and inv.reply_id is not None
    before = NestMessage.objects.count()
    assert crows.invoke_crow(inv.id) is None
    assert NestMessage.objects.count() == before
    inv.refresh_from_db()
    assert inv.status == Invocation.Status.DONE
