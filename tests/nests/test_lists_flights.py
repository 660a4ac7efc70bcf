"""Who flies, and the guardrails on flights: core-first rotation, borrowing, at most three
crows per item, at most CROWS_MAX_IN_FLIGHT in the air, waiting never dropping."""

from __future__ import annotations

import pytest
from django.db import transaction

from flock import worker
from flock.brains import BrainReply
from flock.models import Crow
from nests.actions import create_nest, post_list
from nests.actions.lists import land_sortie, launch_sortie
from nests.actions.lists.crews import pick_crows
from nests.actions.lists.progress import fit_subtasks
from nests.models import Sortie
from tests.nests.test_lists_support import named, run_list, stream, trust_everyone

pytestmark = pytest.mark.django_db

MURDER = "should we use postgres or sqlite?"


def _pick(nest_id: str, count: int) -> list[tuple[str, bool]]:
    with transaction.atomic():
        return pick_crows(nest_id, count=count)


def test_core_crows_come_first_rotating_then_borrowed_ones_rotating():
    create_nest("Launch", crows=["Pepper", "Inky"])
    assert _pick("launch", 1) == [("Pepper", False)]
    assert _pick("launch", 1) == [("Inky", False)]
    assert _pick("launch", 3) == [("Pepper", False), ("Inky", False), ("Hugin", True)]
    assert _pick("launch", 3) == [("Pepper", False), ("Inky", False), ("Munin", True)]


def test_the_todo_nest_picks_from_the_whole_roster_and_borrows_nobody():
    """Working crows first, then Quill and Boss, whose day jobs are the owner and the flock."""
    picks = [_pick("todo", 3) for _ in range(3)]
    names = [n for group in picks for n, _ in group]
    assert names == ["Hugin", "Munin", "Pepper", "Inky", "Soot", "Rook", "Quill", "Boss", "Hugin"]
    assert not any(b for group in picks for _, b in group)


def test_sentry_elder_quarantined_and_retired_crows_never_work():
    Crow.objects.filter(name="Quill").update(status=Crow.Status.QUARANTINED)
    Crow.objects.filter(name="Boss").update(status=Crow.Status.RETIRED)
    create_nest("Small", crows=["Quill", "Hugin"])
    picks = [name for _ in range(4) for name, _ in _pick("todo", 3)]
    assert not {"Sentry", "Elder", "Quill", "Boss"} & set(picks)
    assert _pick("small", 2) == [("Hugin", False), ("Munin", True)]


def test_at_most_three_crows_fly_one_item():
    assert len(_pick("todo", 5)) == 3
    assert fit_subtasks(["a", "b", "c", "d"], 3) == ["a", "b", "c; d"]
    assert fit_subtasks(["a", "b"], 3) == ["a", "b"]


def test_a_four_part_split_flies_three_crows_and_keeps_every_part():
    trust_everyone()
    todo = run_list("write the intro, fix the build, update the docs and email the team")
    events = stream(todo.list_id)
    (triaged,) = named(events, "item.triaged")
    assert triaged["mode"] == "split"
    assert triaged["subtasks"] == ["write the intro", "fix the build", "update the docs; email the team"]
    assert "at most 3 crows per item" in triaged["reason"]
    workers = [p["crow"] for p in named(events, "crow.flying") if p["crow"] not in ("Sentry", "Elder")]
    assert len(workers) == len(set(workers)) == 3


def test_borrowed_is_true_only_for_crows_outside_the_core():
    trust_everyone()
    create_nest("Duo", crows=["Rook"])
    todo = run_list(MURDER, nest_id="duo")
    flying = {p["crow"]: p["borrowed"] for p in named(stream(todo.list_id), "crow.flying")}
    assert flying.pop("Sentry") is False and flying.pop("Elder") is False
    assert flying.pop("Rook") is False
    assert len(flying) == 2 and all(flying.values())


def _reply(tokens: int = 10) -> BrainReply:
    return BrainReply(ok=True, text="done", tokens_in=tokens, tokens_out=0, provider="mock", model="mock", latency_ms=1)


def test_a_sortie_waits_for_a_free_slot_and_the_landing_hands_it_over(settings):
    settings.CROWS_MAX_IN_FLIGHT = 1
    todo = post_list("milk\neggs", requester="ada")
    first, second = Sortie.objects.filter(todo_list=todo).order_by("id")
    assert launch_sortie(first.pk) is not None
    assert launch_sortie(second.pk) is None
    second.refresh_from_db()
    assert second.status == Sortie.Status.WAITING and second.waiting_since is not None
    names = [n for n, _ in stream(todo.list_id)]
    assert names.count("crow.flying") == 1

    land_sortie(first.pk, _reply(), jev={})
    second.refresh_from_db()
    assert second.status == Sortie.Status.PLANNED  # woken, and its task queued again
    worker.run_pending()
    second.refresh_from_db()
    assert second.status == Sortie.Status.LANDED


def test_a_landing_wakes_only_the_oldest_waiting_sorties_for_the_free_slots(settings):
    settings.CROWS_MAX_IN_FLIGHT = 2
    todo = post_list("milk\neggs\nbread\nbutter", requester="ada")
    first, second, third, fourth = Sortie.objects.filter(todo_list=todo).order_by("id")
    assert launch_sortie(first.pk) is not None and launch_sortie(second.pk) is not None
    assert launch_sortie(third.pk) is None and launch_sortie(fourth.pk) is None

    land_sortie(first.pk, _reply(), jev={})
    third.refresh_from_db()
    fourth.refresh_from_db()
    assert third.status == Sortie.Status.PLANNED  # one slot freed: the oldest waiter has it
    assert fourth.status == Sortie.Status.WAITING


def test_a_landing_with_nobody_waiting_does_not_count_the_crows_in_the_air():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    todo = post_list("milk", requester="ada")
    sortie = Sortie.objects.get(todo_list=todo)
    assert launch_sortie(sortie.pk) is not None
    with CaptureQueriesContext(connection) as seen:
        land_sortie(sortie.pk, _reply(), jev={})
    counts = [q["sql"] for q in seen.captured_queries if "COUNT(" in q["sql"].upper() and "nests_sortie" in q["sql"]]
    assert counts == []


def test_a_flight_whose_landing_met_a_dead_database_flies_again_when_its_task_comes_back(monkeypatch):
    from django.db.utils import OperationalError

    from nests.actions.lists import flights

    todo = post_list("milk", requester="ada")
    sortie = Sortie.objects.get(todo_list=todo)
    real_land = flights.land_sortie

    def database_gone(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(flights, "land_sortie", database_gone)
    with pytest.raises(OperationalError):
        flights.fly_sortie(sortie.pk)
    sortie.refresh_from_db()
    assert sortie.status == Sortie.Status.FLYING  # its thread let go of it in the air
    assert sortie.pk not in flights.IN_AIR

    # Its task comes back in the same process (a retry, or a re-run once its lease ran
    # out): the sortie flies again, without a second take-off, and lands once.
    monkeypatch.setattr(flights, "land_sortie", real_land)
    assert flights.fly_sortie(sortie.pk) == "landed"
    sortie.refresh_from_db()
    assert sortie.status == Sortie.Status.LANDED
    names = [n for n, _ in stream(todo.list_id)]
    assert names.count("crow.flying") == 1 and names.count("crow.landed") == 1


def test_a_duplicate_task_leaves_a_sortie_a_sibling_thread_is_flying_alone():
    from nests.actions.lists import flights

    todo = post_list("milk", requester="ada")
    sortie = Sortie.objects.get(todo_list=todo)
    assert flights.launch_sortie(sortie.pk) is not None  # in the air, in "another thread"
    assert sortie.pk in flights.IN_AIR
    assert flights.fly_sortie(sortie.pk) == "not flown"
    sortie.refresh_from_db()
    assert sortie.status == Sortie.Status.FLYING


def test_a_take_off_whose_commit_fails_leaves_nothing_in_the_air(monkeypatch):
    from contextlib import contextmanager
    from types import SimpleNamespace

    from django.db import transaction
    from django.db.utils import OperationalError

    from nests.actions.lists import flights

    todo = post_list("milk", requester="ada")
    sortie = Sortie.objects.get(todo_list=todo)

    @contextmanager
    def commit_fails():
        with transaction.atomic():
            yield
        raise OperationalError("could not commit: the server closed the connection")

    monkeypatch.setattr(flights, "transaction", SimpleNamespace(atomic=commit_fails))
    with pytest.raises(OperationalError):
        flights.launch_sortie(sortie.pk)
    # Whatever the database kept, no thread of this process is flying it: a re-run may.
    assert sortie.pk not in flights.IN_AIR


def test_with_one_slot_a_whole_list_still_finishes_and_never_has_two_in_the_air(settings):
    settings.CROWS_MAX_IN_FLIGHT = 1
    trust_everyone()
    todo = run_list(f"{MURDER}\nwrite a haiku about crows")
    events = stream(todo.list_id)
    in_air = peak = 0
    for name, _ in events:
        in_air += {"crow.flying": 1, "crow.landed": -1}.get(name, 0)
        peak = max(peak, in_air)
    assert peak == 1 and [n for n, _ in events][-1] == "list.finished"


def test_a_flight_locks_its_list_item_and_sortie_in_one_statement():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    todo = post_list("milk", requester="ada")
    sortie = Sortie.objects.get(todo_list=todo)
    with CaptureQueriesContext(connection) as seen:
        assert launch_sortie(sortie.pk) is not None
    reads = [q["sql"] for q in seen.captured_queries
             if q["sql"].startswith("SELECT") and any(t in q["sql"] for t in ("nests_todolist", "nests_item\"", "nests_sortie"))]
    # On SQLite the count of crows in the air and the reservations come with the lock
    # (exact under the write lock the transaction holds); PostgreSQL reads them after the gate.
    assert len(reads) == (2 if connection.vendor == "postgresql" else 1)
    assert "nests_todolist" in reads[0] and "nests_item" in reads[0]


def test_a_flight_task_queued_by_an_earlier_server_with_its_owners_still_flies():
    from django_tasks_db.models import DBTaskResult

    todo = post_list("milk", requester="ada")
    sortie = Sortie.objects.get(todo_list=todo)
    queued = DBTaskResult.objects.get(task_path="nests.tasks.fly_sortie_task")
    assert queued.args_kwargs == {"args": [sortie.pk], "kwargs": {}}

    # Earlier servers passed the sortie's list and item along; they are not needed now.
    queued.args_kwargs = {"args": [sortie.pk], "kwargs": {"owners": [todo.pk, sortie.item_id]}}
    queued.save(update_fields=["args_kwargs"])
    worker.run_pending()
    sortie.refresh_from_db()
    assert sortie.status == Sortie.Status.LANDED


def test_a_duplicate_task_for_a_sortie_flies_it_once():
    from nests.tasks import fly_sortie_task

    todo = post_list("milk", requester="ada")
    sortie = Sortie.objects.get(todo_list=todo)
    fly_sortie_task.enqueue(sortie.pk)
    worker.run_pending()
    names = [n for n, _ in stream(todo.list_id)]
    assert names.count("crow.flying") == 1 and names.count("crow.landed") == 1


def test_a_flight_whose_code_trips_lands_as_a_failure_and_the_item_still_ends(monkeypatch):
    trust_everyone()

    def trip(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("nests.actions.lists.progress.answer_item", trip)
    todo = run_list("write a haiku about crows")
    events = stream(todo.list_id)
    landed = named(events, "crow.landed")
    assert landed[-1]["ok"] is False and "RuntimeError" in landed[-1]["error"]
    assert named(events, "item.skipped")[0]["reason"] == "failure"
    assert [n for n, _ in events][-1] == "list.finished"


@pytest.mark.django_db(transaction=True)
def test_a_trusted_list_flies_without_a_savepoint():
    # The verdict, the triage's conclusion, the flights' start and the answer join the
    # landing's transaction (flock.db.action_atomic): a savepoint would cost each of them
    # two statements, two round trips on PostgreSQL.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    trust_everyone()
    run_list("milk")  # the first list creates the flock's one-off rows (gate, rotations)
    todo = post_list(f"{MURDER}\nwrite a haiku about crows", requester="ada")
    with CaptureQueriesContext(connection) as queries:
        worker.run_pending()

    todo.refresh_from_db()
    assert todo.status == "finished"
    assert [q["sql"] for q in queries.captured_queries if "SAVEPOINT" in q["sql"]] == []


def test_a_budget_skip_waits_for_the_items_crows_in_the_air_to_land(settings):
    """The item ends only after its flights: a sortie that cannot take off for the budget
    while siblings fly leaves the item to be skipped when the last of them lands."""
    from nests.actions.lists import flights
    from nests.models import Item

    trust_everyone()
    todo = post_list(MURDER, requester="ada")
    item = Item.objects.get(todo_list=todo)
    workers = Sortie.objects.filter(item=item, role=Sortie.Role.WORKER)
    while not workers.exists():
        assert worker.run_pending(max_tasks=1) == 1
    first, second, third = workers.order_by("id")
    assert launch_sortie(first.pk) is not None and launch_sortie(second.pk) is not None
    item.refresh_from_db()
    in_air = Sortie.objects.filter(pk__in=[first.pk, second.pk]).values_list("estimate", flat=True)
    settings.CROWS_ITEM_TOKEN_BUDGET = sum(in_air)  # the third does not fit
    assert launch_sortie(third.pk) is None
    item.refresh_from_db()
    assert not item.ended and flights.budget_skip_pending(item)
    assert "item.skipped" not in [n for n, _ in stream(todo.list_id)]

    land_sortie(first.pk, _reply(), jev={})
    assert "item.skipped" not in [n for n, _ in stream(todo.list_id)]
    land_sortie(second.pk, _reply(), jev={})
    for pk in (first.pk, second.pk):
        flights.IN_AIR.release(pk)
    worker.run_pending()
    names = [n for n, _ in stream(todo.list_id)]
    skipped_at = names.index("item.skipped")
    assert skipped_at > max(i for i, n in enumerate(names) if n == "crow.landed")
    assert names.count("crow.flying") == names.count("crow.landed") == 3  # the Sentry and two crows
    assert named(stream(todo.list_id), "item.skipped")[0]["reason"] == "budget"
    assert names[-1] == "list.finished"
    assert "Elder" not in [p["crow"] for p in named(stream(todo.list_id), "crow.flying")]


def test_the_crow_read_with_the_sortie_lock_is_the_crows_row():
    from django.db import transaction

    from flock.models import Crow
    from nests.actions.lists.flights import crow_of, lock_sortie

    todo = post_list("milk", requester="ada")
    sortie = Sortie.objects.get(todo_list=todo)
    Crow.objects.filter(name=sortie.crow).update(in_roster=False, model="mock:tidy")
    with transaction.atomic():
        locked, _, _ = lock_sortie(sortie.pk)
        read = crow_of(locked)
    stored = Crow.objects.get(name=sortie.crow)
    fields = [f.attname for f in Crow._meta.concrete_fields]
    assert {f: getattr(read, f) for f in fields} == {f: getattr(stored, f) for f in fields}
    assert read.in_roster is False and read.brain_spec == stored.brain_spec
