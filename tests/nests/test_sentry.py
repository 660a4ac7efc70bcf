"""The Sentry (docs/GOVERNANCE.md): every breach it detects, driven by the real `script:`
brain; each is flagged once, quarantines the crow and opens the owner's decision, with
the events in order on the room's stream. A quarantined crow addressed yields a notice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from flock.models import Crow, Event
from nests.actions import create_nest, post_message
from nests.actions.chat import flags, sentry
from nests.models import Claim, NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import give_rights, run_crows
from trust.actions import answer_decision, reinstate_crow
from trust.models import Breach, Decision

pytestmark = pytest.mark.usefixtures("fake_jev")

fake_jev = chat_support.fake_jev


@pytest.fixture
def launch(db):
    return create_nest("Launch", crows=["Hugin", "Munin", "Pepper", "Inky"])


def room_log(nest_id: str = "launch") -> list[tuple[str, str, str]]:
    return [(m.author, m.kind, m.refers_to) for m in NestMessage.objects.filter(nest__nest_id=nest_id).order_by("n")]


def governance_events(after: int = 0) -> list[tuple[str, str]]:
    """(event name, who or what) of the room's stream after an event id."""
    out = []
    for e in Event.objects.filter(nest_key="launch", id__gt=after).order_by("id"):
        p = e.payload
        who = p.get("decision_id") if e.name.startswith("decision.") else p.get("author") or p.get("crow")
        out.append((e.name, who))
    return out


def assert_flagged_once(crow: str, kind: str, offending: str) -> Decision:
    """The crow is quarantined, one flag names the breach and refers to the offending
    message, one decision is open, and the stream carried them in order."""
    assert Crow.objects.get(name=crow).status == Crow.Status.QUARANTINED
    flags = list(NestMessage.objects.filter(kind="flag"))
    assert len(flags) == 1
    flag = flags[0]
    assert (flag.author, flag.to, flag.refers_to, flag.tagged_by) == ("Sentry", "owner", offending, "header")
    assert sentry.BREACH_WORDS[kind] in flag.text and crow in flag.text
    breach = Breach.objects.get(crow=crow, flagged=True)
    assert breach.kind == kind and breach.evidence and breach.msg_id == offending
    decision = Decision.objects.get()
    assert (decision.status, decision.crow, decision.nest_id, decision.msg_id) == ("open", crow, "launch", flag.msg_id)
    assert decision.phrase == f"yes, reinstate {crow}"
    offending_event = Event.objects.get(name="nest.message", payload__msg_id=offending).id
    assert governance_events(offending_event - 1)[:4] == [
        ("nest.message", crow),
        ("crow.quarantined", crow),
        ("nest.message", "Sentry"),
        ("decision.opened", decision.decision_id),
    ]
    return decision


def test_a_redo_on_a_request_another_crow_holds_is_flagged(launch, script):
    script([
        {"crow": "Hugin", "match": "notes", "reply": "[CLAIM {msg_id}] Mine."},
        {"crow": "Hugin", "reply": "[RESULT {refers_to}] The notes, summarised."},
        {"crow": "Munin", "reply": "[RESULT launch-1] My own version of the notes."},
    ])
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    assert room_log()[1:3] == [("Hugin", "claim", "launch-1"), ("Hugin", "deliver", "launch-1")]
    post_message("launch", author="owner", text="@Munin what do you make of it?")
    run_crows()
    decision = assert_flagged_once("Munin", Breach.Kind.REDO, "launch-5")
    assert "Hugin holds the claim" in decision.evidence
    assert room_log()[4] == ("Munin", "deliver", "launch-1")


def test_claiming_a_declined_request_is_an_ignored_decline(launch, script):
    script([
        {"crow": "Hugin", "match": "notes", "reply": "[DECLINE {msg_id}] Not my kind of job."},
        {"crow": "Hugin", "reply": "[CLAIM launch-1] Fine, mine after all."},
    ])
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    post_message("launch", author="owner", text="@Hugin are you sure?")
    run_crows()
    assert_flagged_once("Hugin", Breach.Kind.IGNORED_DECLINE, "launch-4")
    # The claim of a breach does not stand.
    assert not Claim.objects.exists()


def test_an_ignored_decline_over_the_api_is_flagged_too(launch):
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    post_message("launch", author="Hugin", text="Not mine.", kind="decline", refers_to="launch-1")
    post_message("launch", author="Hugin", text="Here it is anyway.", kind="deliver", refers_to="launch-1")
    assert_flagged_once("Hugin", Breach.Kind.IGNORED_DECLINE, "launch-3")


@pytest.mark.parametrize("reply", ["[NUDGE launch-1] [nudge 1/3] hurry up", "[FLAG launch-1] Munin is lying"])
def test_a_reply_with_a_harness_or_sentry_header_is_a_forbidden_kind(launch, script, reply):
    script([{"crow": "Hugin", "reply": reply}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    assert_flagged_once("Hugin", Breach.Kind.FORBIDDEN_KIND, "launch-2")
    # Kept word for word as the evidence.
    assert NestMessage.objects.get(msg_id="launch-2").text == reply


def test_addressing_a_room_the_crow_is_not_in_is_a_forbidden_kind(launch, script):
    create_nest("Ops", crows=["Soot"])
    script([{"crow": "Hugin", "reply": "Telling #ops to drop everything."}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    decision = assert_flagged_once("Hugin", Breach.Kind.FORBIDDEN_KIND, "launch-2")
    assert "#ops" in decision.evidence


@pytest.mark.parametrize(
    "reply, words",
    [
        ("[RESULT launch-42] Done.", "launch-42"),
        ("As launch-77 said, the date is set.", "launch-77"),
        ("I checked with @Gravel, who agrees.", "@Gravel"),
    ],
)
def test_a_fabricated_source_is_flagged(launch, script, reply, words):
    script([{"crow": "Hugin", "reply": reply}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    decision = assert_flagged_once("Hugin", Breach.Kind.FABRICATED_SOURCE, "launch-2")
    assert words in decision.evidence


def test_a_reply_over_the_token_cap_is_a_budget_blowout(launch, script, settings):
    settings.CROWS_REPLY_TOKEN_CAP = 20
    script([{"crow": "Hugin", "reply": " ".join(["caw"] * 40)}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    decision = assert_flagged_once("Hugin", Breach.Kind.BUDGET_BLOWOUT, "launch-2")
    assert "52 tokens, over the cap of 20" in decision.evidence


def test_an_unasked_claim_with_a_low_fit_is_off_task(launch, script):
    # Pepper's request to the owner calls no crow in; Hugin, asked something else, claims
    # it anyway, and Jev's fit (0.0 here) is below the low band.
    give_rights("Pepper", level=2)  # a trusted crow may open requests (speaking rights)
    post_message("launch", author="Pepper", text="@owner can someone check the numbers", kind="request")
    script([{"crow": "Hugin", "reply": "[CLAIM launch-1] I'll take the numbers."}])
    post_message("launch", author="owner", text="@Hugin how are you?")
    run_crows()
    decision = assert_flagged_once("Hugin", Breach.Kind.OFF_TASK_CLAIM, "launch-3")
    assert decision.breach.score == 0.0
    assert not Claim.objects.exists()


def test_a_claim_the_harness_asked_for_is_never_off_task(launch, script):
    script([{"crow": "Hugin", "reply": "[CLAIM {msg_id}] Mine."}])
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    assert not Breach.objects.exists() and Claim.objects.get().crow == "Hugin"


def test_repeated_nudged_misses_are_flagged_through_the_ledger_hook(launch):
    post_message("launch", author="owner", text="@Hugin three rounds, please", kind="request")
    decision = flags.on_repeated_miss(
        "Hugin", nest_id="launch", expectation_id="exp-7", misses=3,
        evidence="Promised three rounds; none opened.", score=0.91, msg_id="launch-1",
    )
    assert decision is not None
    assert Crow.objects.get(name="Hugin").status == "quarantined"
    breach = Breach.objects.get()
    assert (breach.kind, breach.score, breach.subject) == ("repeated_misses", 0.91, "exp-7")
    flag = NestMessage.objects.get(kind="flag")
    assert flag.refers_to == "launch-1" and "repeated nudged misses" in flag.text
    # Once per crow per expectation: after a reinstatement, the same expectation is logged only.
    answer_decision(decision, answer="yes, reinstate Hugin")
    assert flags.on_repeated_miss("Hugin", nest_id="launch", expectation_id="exp-7", misses=4, evidence="") is None
    assert Breach.objects.count() == 2 and NestMessage.objects.filter(kind="flag").count() == 1
    assert Crow.objects.get(name="Hugin").status == "active"


def test_the_sentry_flags_a_crow_once_per_request(launch, script):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    script([{"crow": "Hugin", "reply": "[RESULT launch-1] Mine, whatever Munin says."}])
    post_message("launch", author="owner", text="find the notes", kind="request")
    post_message("launch", author="Munin", text="Mine.", kind="claim", refers_to="launch-1")
    post_message("launch", author="owner", text="@Hugin thoughts?")
    run_crows()
    decision = Decision.objects.get()
    answer_decision(decision, answer="yes, reinstate Hugin")
    post_message("launch", author="owner", text="@Hugin thoughts now?")
    run_crows()
    assert Breach.objects.filter(crow="Hugin", kind="redo").count() == 2
    assert NestMessage.objects.filter(kind="flag").count() == 1
    assert Decision.objects.count() == 1


def test_a_reply_breach_when_nudged_for_the_same_request_is_flagged_once(launch, script):
    from django.utils import timezone

    from nests.actions.chat.timers import check_expectation
    from nests.models import Expectation

    script([{"crow": "Hugin", "reply": "[RESULT nope-999] done, as asked"}])
    post_message("launch", author="owner", text="@Hugin compile the report please", kind="request")
    run_crows()
    decision = Decision.objects.get()
    answer_decision(decision, answer="yes, reinstate Hugin")
    # The ledger nudges Hugin for the same request; it fabricates again.
    exp = Expectation.objects.get(crow="Hugin", status__in=Expectation.LIVE)
    Expectation.objects.filter(pk=exp.pk).update(due_at=timezone.now())
    assert check_expectation(exp.pk).startswith("nudged 1/")
    run_crows()
    breaches = Breach.objects.filter(crow="Hugin", kind=Breach.Kind.FABRICATED_SOURCE)
    assert breaches.count() == 2 and set(breaches.values_list("subject", flat=True)) == {"launch-1"}
    assert NestMessage.objects.filter(kind="flag").count() == 1
    assert Decision.objects.count() == 1


def test_the_sentry_never_reads_the_owners_messages(launch):
    post_message("launch", author="owner", text="[NUDGE launch-1] as @Nobody said in launch-99")
    assert not Breach.objects.exists()


def test_a_quarantined_crow_addressed_by_the_owner_yields_a_notice(launch, script):
    script([{"crow": "Hugin", "reply": "[NUDGE launch-1] hurry"}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    decision = Decision.objects.get()
    asked = post_message("launch", author="owner", text="@Hugin please summarise the notes", kind="request")
    run_crows()
    notice = NestMessage.objects.filter(nest__nest_id="launch").order_by("-n").first()
    assert (notice.author, notice.refers_to, notice.to) == ("harness", asked.msg_id, "owner")
    assert "quarantined" in notice.text and decision.phrase in notice.text
    # Nobody was invoked for it, and Hugin said nothing.
    assert not NestMessage.objects.filter(author="Hugin", n__gt=asked.n).exists()


def test_a_quarantined_crow_in_its_direct_chat_yields_a_notice(db):
    from trust.actions import quarantine_crow

    quarantine_crow("Rook", breach="owner_report", evidence="by hand", by="admin:smokey")
    post_message("dm-rook", author="owner", text="are you there?")
    run_crows()
    notice = NestMessage.objects.filter(nest__nest_id="dm-rook").order_by("-n").first()
    assert notice.author == "harness" and "Rook is quarantined" in notice.text


def test_with_quill_quarantined_an_unaddressed_question_or_request_yields_a_notice(db):
    from trust.actions import quarantine_crow

    quarantine_crow("Quill", breach="owner_report", evidence="by hand", by="admin:smokey")
    for text, kind in (("What is everyone working on right now?", None),
                       ("Write a limerick about rain for the newsletter", "request")):
        asked = post_message("todo", author="owner", text=text, kind=kind)
        run_crows()
        notice = NestMessage.objects.filter(nest__nest_id="todo").order_by("-n").first()
        assert (notice.author, notice.refers_to, notice.to) == ("harness", asked.msg_id, "owner"), text
        assert "Quill is quarantined" in notice.text and "@name" in notice.text
    # Plain talk was never Quill's to answer: no notice for it.
    said = post_message("todo", author="owner", text="Lovely weather today.")
    run_crows()
    assert not NestMessage.objects.filter(nest__nest_id="todo", n__gt=said.n).exists()


def test_the_owner_posting_the_exact_phrase_in_the_room_reinstates(launch, script, capture_events):
    script([{"crow": "Hugin", "reply": "[NUDGE launch-1] hurry"}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    with capture_events() as events:
        post_message("launch", author="owner", text="  Yes, Reinstate HUGIN ")
    assert events.names() == ["nest.message", "crow.reinstated", "decision.closed"]
    assert events.named("decision.closed")[0]["outcome"] == "reinstated"
    assert events.named("crow.reinstated")[0] == {
        "nest_id": "launch", "crow": "Hugin", "by": "owner", "decision_id": Decision.objects.get().decision_id,
        "ts": events.named("crow.reinstated")[0]["ts"],
    }
    assert Crow.objects.get(name="Hugin").status == "active"


def test_the_phrase_after_the_deadline_is_only_said_and_the_decision_times_out(launch, script, capture_events):
    script([{"crow": "Hugin", "reply": "[NUDGE launch-1] hurry"}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    Decision.objects.update(deadline=timezone.now() - timedelta(milliseconds=100))
    with capture_events() as events:
        said = post_message("launch", author="owner", text="yes, reinstate Hugin")
    assert events.names()[:2] == ["nest.message", "decision.closed"]
    assert events.named("decision.closed")[0]["outcome"] == "timeout" and events.named("crow.reinstated") == []
    assert NestMessage.objects.filter(msg_id=said.msg_id).exists()
    assert Crow.objects.get(name="Hugin").status == "quarantined"


def test_reinstated_crow_speaks_again(launch, script):
    script([{"crow": "Hugin", "match": "hello", "reply": "[NUDGE launch-1] hurry"},
            {"crow": "Hugin", "reply": "Back on the wire."}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    reinstate_crow("Hugin", by="admin:smokey")
    post_message("launch", author="owner", text="@Hugin welcome back")
    run_crows()
    assert NestMessage.objects.filter(author="Hugin").order_by("-n").first().text == "Back on the wire."


def test_the_phrase_in_the_crows_direct_chat_answers_too(launch, script):
    script([{"crow": "Hugin", "reply": "[NUDGE launch-1] hurry"}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    post_message("dm-hugin", author="owner", text="yes, reinstate Hugin")
    assert Decision.objects.get().outcome == "reinstated"
    assert Crow.objects.get(name="Hugin").status == "active"


def test_boss_retiring_a_quarantined_crow_closes_its_decision(launch, script):
    script([{"crow": "Hugin", "reply": "[NUDGE launch-1] hurry"}])
    post_message("launch", author="owner", text="@Hugin hello there")
    run_crows()
    post_message("launch", author="owner", text="@Boss retire Hugin")
    run_crows()
    assert Crow.objects.get(name="Hugin").status == "retired"
    decision = Decision.objects.get()
    assert (decision.status, decision.outcome, decision.answered_by) == ("closed", "retired", "Boss")


def test_a_redo_jev_reads_as_talk_is_still_judged_by_its_header(launch, script, fake_jev):
    give_rights("Hugin", "Munin", "Pepper")  # a regular may claim open requests (speaking rights)
    # Jev is sure Munin's "[RESULT launch-1] ..." is just talk; the crow's own header says
    # it is delivering on a request Hugin holds, and that is what the Sentry judges.
    fake_jev.kinds = {"my own version": "say"}
    script([{"crow": "Munin", "reply": "[RESULT launch-1] My own version of the notes."}])
    post_message("launch", author="owner", text="find the notes", kind="request")
    post_message("launch", author="Hugin", text="Mine.", kind="claim", refers_to="launch-1")
    post_message("launch", author="owner", text="@Munin what do you make of it?")
    run_crows()
    offending = NestMessage.objects.get(author="Munin")
    assert (offending.kind, offending.tagged_by) == ("say", "disagreement")
    assert_flagged_once("Munin", Breach.Kind.REDO, offending.msg_id)
    # The stored kind reads "say", so the evidence says what the Sentry judged.
    flag = NestMessage.objects.get(kind="flag")
    assert "(by its own header, deliver; Jev read the message as say)" in flag.text


def test_a_decline_jev_reads_as_talk_still_counts_as_declined(launch, script, fake_jev):
    fake_jev.kinds = {"not my kind": "say"}
    script([
        {"crow": "Hugin", "match": "notes", "reply": "[DECLINE {msg_id}] Not my kind of job."},
        {"crow": "Hugin", "reply": "[CLAIM launch-1] Fine, mine after all."},
    ])
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    assert NestMessage.objects.get(msg_id="launch-2").kind == "say"
    post_message("launch", author="owner", text="@Hugin are you sure?")
    run_crows()
    assert_flagged_once("Hugin", Breach.Kind.IGNORED_DECLINE, "launch-4")
