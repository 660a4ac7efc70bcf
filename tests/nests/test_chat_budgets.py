"""Nest budgets and the loop guard (docs/CHATROOM.md): each owner
message grants the room CROWS_EXCHANGES_PER_TURN crow invocations, tokens are counted per
day, wind-down is said in the room, and no chain of crows calling crows outruns the
exchanges, whatever the brains say."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from flock import worker
from nests.actions import create_nest, post_message
from nests.actions.chat.budgets import read_budget, top_up_budget
from nests.models import Expectation, Invocation, NestBudget, NestMessage
from tests.support import scripted_brain as chat_support
from tests.support.scripted_brain import make_trusted, run_crows

pytestmark = pytest.mark.usefixtures("fake_jev")
CROWS = ["Hugin", "Munin", "Pepper", "Inky"]

# Shared fixtures (tests/support/scripted_brain.py), bound here so pytest finds them.
fake_jev = chat_support.fake_jev
script_brains = chat_support.script_brains


@pytest.fixture
def launch(db, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 5
    return create_nest("Launch", crows=CROWS)


@pytest.fixture
def pass_the_parcel(fake_jev, script_brains):
    """A misbehaving flock: every crow, whatever it is asked, asks the next crow for help."""
    fake_jev.kinds = {"could you help": "request"}
    for crow in CROWS:
        make_trusted(crow, "writing", level=2)

    def script(request):
        me = request.persona.name
        nxt = CROWS[(CROWS.index(me) + 1) % len(CROWS)] if me in CROWS else CROWS[0]
        return f"@{nxt} could you help with this? I am stuck."

    return script_brains(script)


def harness_notes(nest_id: str = "launch") -> list[str]:
    return list(NestMessage.objects.filter(nest__nest_id=nest_id, author="harness").order_by("n").values_list("text", flat=True))


def test_a_flock_that_always_asks_another_crow_stops_at_the_exchange_budget(launch, pass_the_parcel):
    post_message("launch", author="owner", text="@Hugin could you help with the launch?", kind="request")
    run_crows()
    done = Invocation.objects.filter(status="done")
    assert done.count() == 5 == len(pass_the_parcel.requests)
    stopped = Invocation.objects.get(status="skipped")
    assert stopped.error == "budget spent" and stopped.depth == 6
    notes = harness_notes()
    assert len(notes) == 2
    assert notes[0].startswith("Wind-down: 1 of 5")
    assert notes[1].startswith("Budget spent: all 5 crow exchanges")
    assert read_budget(launch).exchanges_left == 0
    assert Invocation.objects.filter(status="queued").count() == 0


def test_the_chain_guard_holds_even_when_the_owner_keeps_posting(launch, pass_the_parcel):
    post_message("launch", author="owner", text="@Hugin could you help with the launch?", kind="request")
    for _ in range(3):
        worker.run_pending(max_tasks=1)
        # Every owner message grants a fresh turn, but the chain the first one started
        # still may not run past one turn's worth of exchanges.
        post_message("launch", author="owner", text="keep going, all")
    run_crows()
    chain = Invocation.objects.exclude(status="skipped").count()
    assert chain == 5
    guard = Invocation.objects.get(status="skipped")
    assert "loop guard" in guard.error and guard.depth == 6


def test_each_owner_message_grants_a_fresh_turn_and_leftovers_lapse(launch):
    post_message("launch", author="owner", text="morning")
    budget = read_budget(launch)
    assert (budget.turn, budget.exchanges_left, budget.exchanges_granted) == (1, 5, 5)
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    assert read_budget(launch).exchanges_left == 4
    post_message("launch", author="owner", text="noted, thanks")
    budget = read_budget(launch)
    assert (budget.turn, budget.exchanges_left) == (3, 5)


def test_the_first_owner_message_of_a_day_rolls_the_tokens_over(launch):
    today = timezone.localdate()
    post_message("launch", author="owner", text="morning")
    NestBudget.objects.filter(nest=launch).update(day=today - timedelta(days=1), tokens_used=40)
    post_message("launch", author="owner", text="a new day")
    budget = NestBudget.objects.get(nest=launch)
    assert (budget.day, budget.tokens_used, budget.turn, budget.exchanges_left) == (today, 0, 2, 5)


def test_an_owner_message_grants_its_turn_in_one_statement_and_looks_for_no_cue(launch):
    # Every owner post grants a turn, so that is one upsert of the room's row, the first
    # of the room and of the day too (not a read and a save of the whole row), and only a
    # crow (a debate's moderator) can cue a speaker.
    for text in ("morning", "the plans look good"):
        with CaptureQueriesContext(connection) as queries:
            post_message("launch", author="owner", text=text)
        sql = [q["sql"] for q in queries.captured_queries]
        assert [s.split()[0] for s in sql if "nests_nestbudget" in s] == ["INSERT"]
        assert "ON CONFLICT" in next(s for s in sql if "nests_nestbudget" in s)
    assert not [s for s in sql if "nests_debate" in s]
    assert read_budget(launch).turn == 2


def test_crows_are_not_invoked_when_spent_until_the_owner_tops_up(launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 1
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    assert [m.kind for m in NestMessage.objects.filter(author="Hugin")] == ["claim"]
    assert Invocation.objects.filter(status="skipped", error="budget spent").count() == 1
    # Said once per turn, not on every blocked invocation.
    assert len([n for n in harness_notes() if n.startswith("Budget spent")]) == 1
    top_up_budget(launch, exchanges=2)
    run_crows()
    assert [m.kind for m in NestMessage.objects.filter(author="Hugin").order_by("n")] == ["claim", "deliver"]
    assert read_budget(launch).exchanges_left == 1
    assert any("topped up" in n for n in harness_notes()), harness_notes()


def test_the_token_budget_is_per_day_and_stops_crows_when_spent(launch, settings, script_brains, monkeypatch):
    settings.CROWS_NEST_TOKEN_BUDGET = 150
    monkeypatch.setattr("nests.actions.chat.crows.prompt_tokens", lambda request: 10)
    brain = script_brains(
        lambda r: f"[CLAIM {r.context['msg_id']}] mine" if r.context["expect"] == "claim" else "done", tokens=23
    )
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    # Each reply is capped to what the day has left after its 10-token prompt.
    assert [r.max_tokens for r in brain.requests] == [140, 94]
    assert read_budget(launch).tokens_used == 92
    # 58 left: too few for a prompt and the shortest reply worth a call, so Munin is not
    # called at all, and the day's budget is never overrun.
    post_message("launch", author="owner", text="@Munin what do you think?")
    run_crows()
    assert Invocation.objects.get(crow="Munin").error == "token budget spent"
    assert len(brain.requests) == 2 and read_budget(launch).tokens_used == 92
    assert [n for n in harness_notes() if n.startswith("Budget spent")] == [
        "Budget spent: 58 of 150 tokens are left today in this room, too few for a crow's call. "
        "Crows rest until tomorrow or until the owner tops up the budget."
    ]
    top_up_budget(launch, tokens=100)
    run_crows()
    assert Invocation.objects.get(crow="Munin").status == "done"
    assert read_budget(launch).tokens_used == 138


def test_a_day_of_tokens_is_never_overrun_by_a_prompt(launch, settings):
    # The mock brain counts its prompt as tokens in, as a provider bills it: a call whose
    # prompt does not fit what is left is not made.
    settings.CROWS_NEST_TOKEN_BUDGET = 1500
    for text in ("@Hugin please summarise the launch notes", "@Munin tally last week's seed costs",
                 "@Hugin and the week before?", "@Munin compare the two"):
        post_message("launch", author="owner", text=text, kind="request")
        run_crows()
    budget = read_budget(launch)
    assert 0 < budget.tokens_used <= 1500


def test_the_api_shows_the_budget_left(client, launch):
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    budget = client.get("/api/nests/launch").json()["budget"]
    assert budget["exchanges_left"] == 4 and budget["exchanges_granted"] == 5 and budget["turn"] == 1


def test_with_no_exchanges_per_turn_crows_stay_silent_and_nothing_is_announced(launch, settings):
    settings.CROWS_EXCHANGES_PER_TURN = 0
    post_message("launch", author="owner", text="@Hugin please summarise the launch notes", kind="request")
    run_crows()
    assert NestMessage.objects.filter(nest=launch).count() == 1


def test_a_crow_a_spent_turn_did_not_invoke_is_named_kept_open_and_answers_on_the_next_turn(launch, settings, pass_the_parcel):
    settings.CROWS_EXCHANGES_PER_TURN = 1
    post_message("launch", author="owner", text="@Hugin could you help with the launch?", kind="request")
    run_crows()
    asked = NestMessage.objects.get(author="Hugin")
    assert (asked.kind, asked.to) == ("request", "Munin")
    waiting = Invocation.objects.get(crow="Munin")
    assert (waiting.status, waiting.error) == ("skipped", "budget spent")
    # The room hears who was not invoked, once, and how the owner gives it a turn.
    [notice] = [n for n in NestMessage.objects.filter(author="harness") if "was not invoked" in n.text]
    assert (notice.to, notice.refers_to) == ("owner", asked.msg_id)
    assert f"Munin was not invoked for {asked.msg_id}" in notice.text and "post again, or top up" in notice.text
    # The request stays open in the ledger.
    exp = Expectation.objects.get(crow="Munin")
    assert (exp.check_name, exp.status, exp.message_id) == ("requester_answer", "open", asked.pk)
    post_message("launch", author="owner", text="carry on, all")
    waiting.refresh_from_db()
    assert waiting.status == "queued" and waiting.turn == read_budget(launch).turn
    run_crows()
    assert NestMessage.objects.filter(author="Munin").exists()
    assert Invocation.objects.get(pk=waiting.pk).status == "done"
