"""Banter between crows, and how the end of a list waits for it (at most so long)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from flock import worker
from flock.brains import BrainReply
from flock.models import Crow, Flight
from nests.actions.lists import finish_list
from nests.actions.lists.reservations import list_reserved
from nests.models import Banter, TodoList
from tests.nests.test_lists_support import named, run_list, stream, trust_everyone

pytestmark = pytest.mark.django_db

LONG_LIST = "\n".join(f"write a note about topic {n}" for n in range(6))


@pytest.fixture(autouse=True)
def trusted(db):
    trust_everyone()


def test_at_most_two_lines_of_banter_per_list_each_between_two_crows_of_the_list():
    todo = run_list(LONG_LIST)
    events = stream(todo.list_id)
    banter = named(events, "crow.banter")
    assert len(banter) == 2
    flew = {p["crow"] for p in named(events, "crow.flying")}
    items = {i["item_id"] for i in named(events, "list.started")[0]["items"]}
    for line in banter:
        assert set(line) == {"list_id", "ts", "item_id", "crow", "to", "text"}
        assert line["crow"] in flew and line["to"] in flew and line["crow"] != line["to"]
        assert line["item_id"] in items and line["text"] and "\n" not in line["text"]


def test_banter_is_written_from_both_crows_and_the_lists_recent_events(monkeypatch):
    seen = []

    class Listening:
        def think(self, request):
            seen.append(request)
            return BrainReply(ok=True, text='"Nice landing."\nignored second line', tokens_in=5, tokens_out=3,
                              provider="mock", model="mock", latency_ms=1)

    monkeypatch.setattr("nests.actions.lists.banter.get_brain", lambda spec: Listening())
    todo = run_list("write a haiku about crows\nwrite a limerick about owls")
    (first, *_) = seen
    listener = Crow.objects.get(name=first.context["listener"])
    assert first.task == "banter"
    assert listener.backstory in first.system
    assert first.persona.backstory == Crow.objects.get(name=first.persona.name).backstory
    assert first.persona.relationships == Crow.objects.get(name=first.persona.name).relationships
    assert len(first.context["recent_events"]) == 6
    assert {e["event"] for e in first.context["recent_events"]} >= {"crow.flying", "crow.landed"}
    texts = [p["text"] for p in named(stream(todo.list_id), "crow.banter")]
    assert texts == ["Nice landing.", "Nice landing."]


@pytest.mark.parametrize("reply", [
    BrainReply(ok=False, text="", tokens_in=7, tokens_out=0, provider="mock", model="mock", latency_ms=1, error="down"),
    BrainReply(ok=True, text="   \n  ", tokens_in=7, tokens_out=1, provider="mock", model="mock", latency_ms=1),
])
def test_a_failed_or_empty_line_is_dropped_and_its_tokens_still_count(monkeypatch, reply):
    class Mute:
        def think(self, request):
            return reply

    monkeypatch.setattr("nests.actions.lists.banter.get_brain", lambda spec: Mute())
    todo = run_list("write a haiku about crows\nwrite a limerick about owls")
    events = stream(todo.list_id)
    assert named(events, "crow.banter") == []
    assert set(Banter.objects.filter(todo_list=todo).values_list("status", flat=True)) == {"dropped"}
    landed = sum(p["tokens"] for p in named(events, "crow.landed"))
    assert named(events, "list.finished")[0]["tokens_used"] == landed + 2 * reply.tokens_in + 2 * reply.tokens_out


def test_banter_never_spends_what_the_list_budget_cannot_spare(settings):
    settings.CROWS_LIST_TOKEN_BUDGET = 1450  # a triage and one answer fit; banter does not
    todo = run_list("write a haiku about crows")
    assert named(stream(todo.list_id), "item.answered")
    assert named(stream(todo.list_id), "crow.banter") == []
    assert not Banter.objects.exists()


def _hold_banter_in_the_air(monkeypatch):
    """Banter tasks stay queued (as if their brain were slow) until released."""
    from nests.actions.lists import queue

    held: list[int] = []

    class Held:
        def using(self, **options: object) -> Held:
            return self

        def enqueue(self, pk: int) -> None:
            held.append(pk)

    monkeypatch.setattr(queue._Tasks, "speak_banter", Held())
    return held


def test_list_finished_waits_for_banter_in_flight_then_comes_after_it(monkeypatch):
    from nests.actions.lists import speak_banter

    held = _hold_banter_in_the_air(monkeypatch)
    todo = run_list("write a haiku about crows\nwrite a limerick about owls")
    assert len(held) == 2
    assert TodoList.objects.get(pk=todo.pk).status == "flying"
    assert named(stream(todo.list_id), "list.finished") == []
    for pk in held:
        speak_banter(pk)
    worker.run_pending()
    names = [n for n, _ in stream(todo.list_id)]
    assert names[-1] == "list.finished" and names.count("crow.banter") == 2


def test_list_finished_waits_at_most_the_banter_wait_and_a_late_line_is_dropped(monkeypatch):
    from nests.actions.lists import speak_banter

    held = _hold_banter_in_the_air(monkeypatch)
    todo = run_list("write a haiku about crows\nwrite a limerick about owls")
    TodoList.objects.filter(pk=todo.pk).update(items_done_at=timezone.now() - timedelta(seconds=21))
    finish_list(todo.pk)
    (finished,) = named(stream(todo.list_id), "list.finished")
    for pk in held:
        assert speak_banter(pk).why_dropped == "landed after list.finished"
    assert named(stream(todo.list_id), "crow.banter") == []
    todo.refresh_from_db()
    assert todo.tokens_used == finished["tokens_used"] and list_reserved(todo) == 0
    assert Flight.objects.filter(list_id=todo.list_id, task="banter").count() == 2


def test_banter_keeps_an_answers_worth_of_budget_for_every_item_still_under_way(settings):
    """Banter never blocks work: with room for the banter line but not for the next item's
    answer besides it, the crows keep quiet and every item is answered."""
    # Measured with the mock brain: at this budget, banter that ignored the items still
    # under way took the tokens the third item's answer needed.
    settings.CROWS_LIST_TOKEN_BUDGET = 3900
    todo = run_list("write a haiku about crows\ndraft a launch tweet\nfix the flaky login test")
    events = stream(todo.list_id)
    assert named(events, "item.skipped") == []
    assert len(named(events, "item.answered")) == 3
