"""The list pipeline end to end, driven inline: triage, flights, the Elder, verdicts, the
end of the list. Build state through actions, assert the events the stream carries."""

from __future__ import annotations

import pytest

from nests.actions.lists.reservations import list_reserved
from nests.models import Item
from tests.nests.test_lists_support import (
    approve,
    break_brain,
    let_approvals_time_out,
    named,
    run_list,
    stream,
    trust_everyone,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def trusted(db):
    trust_everyone()


def test_a_trusted_flock_answers_every_item_and_finishes_the_list(trusted):
    todo = run_list("- write a haiku about crows\n- fix the login bug on Safari and update the docs and email the team\n- should we use postgres or sqlite?")
    events = stream(todo.list_id)
    names = [n for n, _ in events]
    assert names[0] == "list.started" and names[-1] == "list.finished"
    assert len(named(events, "item.answered")) == 3
    assert {p["verdict"] for p in named(events, "verdict")} == {"auto"}
    assert len(named(events, "verdict")) == 6
    modes = {p["item_id"]: p["mode"] for p in named(events, "item.triaged")}
    assert sorted(modes.values()) == ["murder", "solo", "split"]
    assert all(i.stage == Item.Stage.ANSWERED for i in todo.items.all())



SOLO = "write a haiku about crows"
SPLIT = "fix the login bug on Safari and update the docs and email the team"
MURDER = "should we use postgres or sqlite?"


def test_each_crow_that_flies_lands_once_and_the_elder_merges_or_synthesises(trusted):
    todo = run_list(f"{SPLIT}\n{MURDER}")
    events = stream(todo.list_id)
    flying = [(p["item_id"], p["crow"]) for p in named(events, "crow.flying")]
    landed = [(p["item_id"], p["crow"]) for p in named(events, "crow.landed")]
    assert sorted(flying) == sorted(landed) and len(set(flying)) == len(flying)
    split_id, murder_id = f"{todo.list_id}-1", f"{todo.list_id}-2"
    split_crows = [c for i, c in flying if i == split_id]
    murder_crows = [c for i, c in flying if i == murder_id]
    assert split_crows[0] == "Sentry" and split_crows[-1] == "Elder" and len(split_crows) == 5
    assert murder_crows[0] == "Sentry" and murder_crows[-1] == "Elder" and len(murder_crows) == 5
    # The workers of one item are different crows, never the Sentry or the Elder.
    for crows in (split_crows[1:-1], murder_crows[1:-1]):
        assert len(set(crows)) == 3 and not {"Sentry", "Elder"} & set(crows)
    answered = {p["item_id"]: p for p in named(events, "item.answered")}
    assert answered[split_id]["crows"] == [*split_crows[1:-1], "Elder"]
    assert "merged from" in answered[split_id]["answer"]
    assert answered[murder_id]["crows"] == [*murder_crows[1:-1], "Elder"]


def test_crow_events_carry_the_contract_fields(trusted):
    todo = run_list(SOLO)
    events = stream(todo.list_id)
    for p in named(events, "crow.flying"):
        assert set(p) == {"list_id", "ts", "item_id", "crow", "borrowed"} and p["borrowed"] is False
    for p in named(events, "crow.landed"):
        assert set(p) == {"list_id", "ts", "item_id", "crow", "ok", "tokens"}
        assert p["ok"] is True and p["tokens"] > 0
    (triaged,) = named(events, "item.triaged")
    assert set(triaged) == {"list_id", "ts", "item_id", "mode", "task_type", "subtasks", "reason", "needs_approval"}
    assert triaged["mode"] == "solo" and triaged["task_type"] == "writing" and triaged["subtasks"] == []
    assert triaged["reason"] and triaged["needs_approval"] is False
    (answered,) = named(events, "item.answered")
    assert set(answered) == {"list_id", "ts", "item_id", "answer", "crows", "needs_approval"}


def test_list_finished_reports_the_real_tokens_of_every_flight_and_banter(trusted):
    from flock.models import Flight

    todo = run_list(f"{SOLO}\n{SPLIT}\n{MURDER}")
    events = stream(todo.list_id)
    (finished,) = named(events, "list.finished")
    flights = Flight.objects.filter(list_id=todo.list_id)
    real = sum(f.tokens_in + f.tokens_out for f in flights)
    assert finished["tokens_used"] == real == todo.tokens_used
    assert finished["token_budget"] == 20000
    landed = sum(p["tokens"] for p in named(events, "crow.landed"))
    banter = sum(f.tokens_in + f.tokens_out for f in flights.filter(task="banter"))
    assert banter > 0 and finished["tokens_used"] == landed + banter
    assert list_reserved(todo) == 0


def test_without_trust_the_owner_is_asked_for_triage_and_output(db):
    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    events = stream(todo.list_id)
    assert [n for n, _ in events][-1] == "item.triaged"
    assert named(events, "item.triaged")[0]["needs_approval"] is True
    assert named(events, "verdict") == []

    approve(item_id, "triage")
    events = stream(todo.list_id)
    assert named(events, "verdict")[0]["verdict"] == "approved"
    (answered,) = named(events, "item.answered")
    assert answered["needs_approval"] is True
    assert [n for n, _ in events][-1] in ("item.answered", "crow.banter")

    approve(item_id, "output")
    events = stream(todo.list_id)
    assert [(p["target"], p["verdict"]) for p in named(events, "verdict")] == [
        ("triage", "approved"), ("output", "approved"),
    ]
    assert [n for n, _ in events][-1] == "list.finished"
    assert Item.objects.get(item_id=item_id).stage == Item.Stage.ANSWERED


@pytest.mark.parametrize(
    "target, how, reason",
    [
        ("triage", "rejected", "triage rejected"),
        ("triage", "timeout", "triage timeout"),
        ("output", "rejected", "output rejected"),
        ("output", "timeout", "output timeout"),
    ],
)
def test_a_rejected_or_timed_out_target_skips_the_item(db, target, how, reason):

    todo = run_list(SOLO)
    item_id = f"{todo.list_id}-1"
    if target == "output":
        approve(item_id, "triage")
    if how == "rejected":
        approve(item_id, target, yes=False)
    else:
        let_approvals_time_out()
    events = stream(todo.list_id)
    assert named(events, "verdict")[-1] == {**named(events, "verdict")[-1], "target": target, "verdict": how}
    assert named(events, "item.skipped") == [{**named(events, "item.skipped")[0], "item_id": item_id, "reason": reason}]
    assert [n for n, _ in events][-1] == "list.finished"
    if target == "triage":
        assert [p["crow"] for p in named(events, "crow.flying")] == ["Sentry"]


def test_every_target_gets_exactly_one_verdict(db):
    from trust.models import Verdict

    todo = run_list(f"{SOLO}\n{MURDER}\n{SPLIT}")
    ids = [f"{todo.list_id}-{n}" for n in (1, 2, 3)]
    approve(ids[0], "triage")
    approve(ids[1], "triage", yes=False)
    let_approvals_time_out()  # item 1's output and item 3's triage
    events = stream(todo.list_id)
    verdicts = [(p["item_id"], p["target"]) for p in named(events, "verdict")]
    assert len(verdicts) == len(set(verdicts)) == Verdict.objects.count() == 4
    assert [n for n, _ in events][-1] == "list.finished"


def test_a_failed_crow_lands_not_ok_and_the_item_is_answered_by_the_others(trusted):

    break_brain("Pepper")
    todo = run_list(MURDER, nest_id=_nest("Debate", ["Pepper", "Inky", "Rook"]))
    events = stream(todo.list_id)
    failed = [p for p in named(events, "crow.landed") if not p["ok"]]
    assert [p["crow"] for p in failed] == ["Pepper"]
    assert "broken" in failed[0]["error"] and failed[0]["tokens"] == 0
    (answered,) = named(events, "item.answered")
    assert answered["crows"] == ["Inky", "Rook", "Elder"]


def test_an_item_whose_crows_all_fail_is_skipped_with_reason_failure(trusted):

    break_brain("Pepper")
    todo = run_list(SOLO, nest_id=_nest("Solo", ["Pepper"]))
    events = stream(todo.list_id)
    assert named(events, "item.skipped")[0]["reason"] == "failure"
    assert named(events, "item.answered") == []
    assert [n for n, _ in events][-1] == "list.finished"
    # The list's record and its report say why, in the brain's own words.
    from nests.queries_lists import list_state, report_markdown

    (item,) = list_state(todo.list_id)["items"]
    assert [f["crow"] for f in item["failures"]] == ["Pepper"] and "broken" in item["failures"][0]["error"]
    assert f"Pepper's flight failed: {item['failures'][0]['error']}" in report_markdown(todo.list_id)


def test_a_murder_item_lists_the_failed_flight_of_its_current_attempt_only(trusted):
    from nests.queries_lists import list_state

    break_brain("Pepper")
    todo = run_list(MURDER, nest_id=_nest("Debate", ["Pepper", "Inky", "Rook"]))
    (item,) = list_state(todo.list_id)["items"]
    assert item["stage"] != "skipped" and [f["crow"] for f in item["failures"]] == ["Pepper"]


def test_when_the_elder_fails_the_answer_is_the_parts_of_the_crows_that_succeeded(trusted):

    break_brain("Elder")
    todo = run_list(SPLIT, nest_id=_nest("Parts", ["Pepper", "Inky", "Rook"]))
    events = stream(todo.list_id)
    elder = [p for p in named(events, "crow.landed") if p["crow"] == "Elder"]
    assert elder and elder[0]["ok"] is False
    (answered,) = named(events, "item.answered")
    # Each part went to the crow that fits it (docs/LISTS.md "Crew"): the bug to the coder.
    assert sorted(answered["crows"]) == ["Inky", "Pepper", "Rook"]
    assert answered["answer"].startswith("Pepper (fix the login bug on Safari):")


def test_when_the_sentry_fails_jev_triages_alone_and_says_so(trusted):

    break_brain("Sentry")
    todo = run_list(SPLIT)
    events = stream(todo.list_id)
    (triaged,) = named(events, "item.triaged")
    assert triaged["mode"] == "solo" and triaged["subtasks"] == []
    assert triaged["task_type"] in ("writing", "research", "code", "planning", "data", "chat")
    assert "Jev alone" in triaged["reason"]
    assert named(events, "item.answered")


def test_a_flight_that_would_overrun_the_item_budget_is_not_started(trusted, settings):
    settings.CROWS_ITEM_TOKEN_BUDGET = 1200  # the Sentry fits; the Sentry plus a worker does not
    todo = run_list(SOLO)
    events = stream(todo.list_id)
    assert [p["crow"] for p in named(events, "crow.flying")] == ["Sentry"]
    assert named(events, "item.skipped")[0]["reason"] == "budget"
    assert named(events, "list.finished")[0]["tokens_used"] == named(events, "crow.landed")[0]["tokens"]


def test_the_list_budget_skips_what_does_not_fit_and_is_never_overrun(trusted, settings):
    settings.CROWS_LIST_TOKEN_BUDGET = 3000
    todo = run_list("\n".join([SOLO, "write a limerick about owls", "write a note to the team", "plan the offsite"]))
    events = stream(todo.list_id)
    skipped = named(events, "item.skipped")
    assert skipped and {p["reason"] for p in skipped} == {"budget"}
    (finished,) = named(events, "list.finished")
    assert finished["token_budget"] == 3000 and finished["tokens_used"] <= 3000
    assert len(skipped) + len(named(events, "item.answered")) == 4


def _nest(name: str, crows: list[str]) -> str:
    from nests.actions import create_nest

    return create_nest(name, crows=crows).nest_id


def test_a_sure_murder_from_jev_lifts_the_brains_solo():
    """Jev and the brain decide the mode together: a judgment call needs no cutting."""
    from types import SimpleNamespace

    from flock.brains import BrainReply
    from nests.actions.lists.triage import decide_triage

    reply = BrainReply(
        ok=True,
        text='{"mode": "solo", "task_type": "code", "subtasks": [], "reason": "One job."}',
        tokens_in=1, tokens_out=1, provider="mock", model="mock", latency_ms=0,
    )
    sure = {"mode": SimpleNamespace(choice="murder", band="high")}
    unsure = {"mode": SimpleNamespace(choice="murder", band="unsure")}
    assert decide_triage(reply, sure, max_crows=3).mode == "murder"
    assert decide_triage(reply, unsure, max_crows=3).mode == "solo"


def test_the_owners_mode_wins_and_a_split_needs_parts():
    from flock.brains import BrainReply
    from nests.actions.lists.triage import decide_triage

    def reply(text: str) -> BrainReply:
        return BrainReply(ok=True, text=text, tokens_in=1, tokens_out=1, provider="mock", model="mock", latency_ms=0)

    solo = reply('{"mode": "solo", "task_type": "code", "subtasks": ["fix it", "test it"], "reason": "One job."}')
    assert decide_triage(solo, {}, max_crows=3, owner_mode="murder").mode == "murder"
    split = decide_triage(solo, {}, max_crows=3, owner_mode="split")
    assert (split.mode, split.subtasks) == ("split", ["fix it", "test it"])
    bare = decide_triage(reply('{"mode": "solo", "task_type": "code", "subtasks": [], "reason": "One job."}'),
                         {}, max_crows=3, owner_mode="split")
    assert bare.mode == "solo" and "no parts to split it into" in bare.reason
