"""Restart-safety, driven inline: work a dead process left behind is picked up by the
start-up recovery, flown once more without a second take-off, and the list finishes."""

from __future__ import annotations

import pytest
from django.test import Client

from flock import worker
from nests.actions import post_list
from nests.actions.lists import launch_sortie, recover_lists
from nests.actions.lists.reservations import list_reserved
from nests.models import Banter, Sortie, TodoList
from tests.nests.test_lists_support import named, run_list, stream, trust_everyone

pytestmark = pytest.mark.django_db


def _forget_queue() -> None:
    """What a crash can lose in the worst case: every queued task."""
    from django_tasks_db.models import DBTaskResult

    DBTaskResult.objects.all().delete()


def test_a_sortie_in_the_air_when_its_process_died_is_flown_again_once():
    trust_everyone()
    todo = post_list("write a haiku about crows", requester="ada")
    sentry = Sortie.objects.get(todo_list=todo)
    assert launch_sortie(sentry.pk) is not None
    Sortie.objects.filter(pk=sentry.pk).update(claimed_by="dead-host-1-0000")
    _forget_queue()

    assert recover_lists()["sorties"] == 1
    worker.run_pending()
    events = stream(todo.list_id)
    flights = [(p["item_id"], p["crow"]) for p in named(events, "crow.flying")]
    landings = [(p["item_id"], p["crow"]) for p in named(events, "crow.landed")]
    assert flights == landings and flights[0][1] == "Sentry" and len(set(flights)) == len(flights)
    assert [n for n, _ in events][-1] == "list.finished"


def test_waiting_sorties_get_the_slots_a_dead_process_held(settings):
    settings.CROWS_MAX_IN_FLIGHT = 1
    todo = post_list("milk\neggs", requester="ada")
    first, second = Sortie.objects.filter(todo_list=todo).order_by("id")
    launch_sortie(first.pk)
    launch_sortie(second.pk)
    Sortie.objects.filter(pk=first.pk).update(claimed_by="dead-host-1-0000")
    _forget_queue()
    recover_lists()
    worker.run_pending()
    assert set(Sortie.objects.filter(todo_list=todo, role="sentry").values_list("status", flat=True)) == {"landed"}


def test_banter_in_the_air_is_dropped_and_a_list_whose_items_ended_finishes():
    trust_everyone()
    todo = post_list("write a haiku about crows", requester="ada")
    worker.run_pending()
    TodoList.objects.filter(pk=todo.pk).update(status=TodoList.Status.FLYING, finished_at=None)
    from flock.models import Event

    Event.objects.filter(list_key=todo.list_id, name="list.finished").delete()
    Banter.objects.create(todo_list=todo, item_id=f"{todo.list_id}-1", speaker="Quill", listener="Boss", estimate=50)
    _forget_queue()
    assert list_reserved(todo) == 50  # the line in the air holds its estimate

    counts = recover_lists()
    assert counts["banter_dropped"] == 1 and counts["finishes"] == 1
    worker.run_pending()
    todo.refresh_from_db()
    assert todo.status == "finished" and list_reserved(todo) == 0
    assert [n for n, _ in stream(todo.list_id)][-1] == "list.finished"


def _held_by_a_live_db_worker(task, arg: int) -> None:
    """A run of `task` that a live db_worker in another process is running right now."""
    from datetime import timedelta

    from django.utils import timezone
    from django_tasks_db.compat import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    from flock.models import TaskLease

    run = task.enqueue(arg)
    DBTaskResult.objects.filter(id=run.id).update(status=TaskResultStatus.RUNNING, started_at=timezone.now())
    TaskLease.objects.create(task_id=run.id, worker_id="db-worker-7", expires_at=timezone.now() + timedelta(seconds=30))


def test_a_server_started_beside_db_workers_leaves_their_flights_and_banter_to_them():
    # CROWS_EMBEDDED_WORKER left on in the scale-out shape: the starting server's recovery
    # must not fly a live worker's sortie a second time (two brain calls) nor drop its line.
    from nests.tasks import fly_sortie_task, speak_banter_task

    todo = post_list("write a haiku about crows", requester="ada")
    sentry = Sortie.objects.get(todo_list=todo)
    assert launch_sortie(sentry.pk) is not None
    Sortie.objects.filter(pk=sentry.pk).update(claimed_by="db-worker-host-2-0000")
    banter = Banter.objects.create(todo_list=todo, item_id=f"{todo.list_id}-1", speaker="Quill", listener="Boss", estimate=50)
    _forget_queue()
    _held_by_a_live_db_worker(fly_sortie_task, sentry.pk)
    _held_by_a_live_db_worker(speak_banter_task, banter.pk)

    counts = recover_lists()
    assert counts["sorties"] == 0 and counts["banter_dropped"] == 0
    banter.refresh_from_db()
    assert banter.status == Banter.Status.FLYING


def test_a_duplicate_run_leaves_a_sortie_in_the_air_in_a_live_process_to_it_until_its_lease_runs_out():
    from flock.models import Flight, TaskLease
    from nests.actions.lists.flights import IN_AIR
    from nests.tasks import fly_sortie_task

    todo = post_list("write a haiku about crows", requester="ada")
    sentry = Sortie.objects.get(todo_list=todo)
    _forget_queue()
    # Another process took off with it and its crow is thinking: its run is RUNNING under
    # a lease its heartbeat renews.
    assert launch_sortie(sentry.pk) is not None
    IN_AIR.release(sentry.pk)
    Sortie.objects.filter(pk=sentry.pk).update(claimed_by="db-worker-host-2-0000")
    _held_by_a_live_db_worker(fly_sortie_task, sentry.pk)
    fly_sortie_task.enqueue(sentry.pk)  # a duplicate, as a start-up recovery may queue

    worker.run_pending()
    sentry.refresh_from_db()
    assert (sentry.status, sentry.claimed_by) == ("flying", "db-worker-host-2-0000")
    assert not Flight.objects.exists() and not named(stream(todo.list_id), "crow.landed")

    # That process dies: once its lease runs out, its run is queued again and flies it.
    from datetime import timedelta

    from django.utils import timezone

    TaskLease.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert worker.requeue_expired() == 1
    worker.run_pending()
    landed = named(stream(todo.list_id), "crow.landed")
    assert [p["crow"] for p in landed][:1] == ["Sentry"]
    assert Flight.objects.filter(crow="Sentry").count() == 1  # one brain call for the triage


def test_recovery_is_registered_to_run_when_the_worker_starts():
    from nests.actions.lists import recover_lists as recover
    from trust.actions import reschedule_timeouts

    assert recover in worker._on_start and reschedule_timeouts in worker._on_start


def test_the_state_snapshot_lists_open_lists_and_pending_approvals():
    todo = post_list("write a haiku about crows", requester="ada")
    worker.run_pending()
    state = Client().get("/api/state").json()
    assert "list.started" in state["capabilities"] and "crow.banter" in state["capabilities"]
    assert "verdict" in state["capabilities"] and "trust.changed" in state["capabilities"]
    (open_list,) = state["open_lists"]
    assert open_list["list_id"] == todo.list_id and open_list["items"] == 1 and open_list["items_ended"] == 0
    (pending,) = state["pending_approvals"]
    assert pending["item_id"] == f"{todo.list_id}-1" and pending["target"] == "triage"
    assert pending["deadline"].endswith("Z")


def test_get_list_returns_its_state_and_404_for_an_unknown_one():
    trust_everyone()
    todo = post_list("write a haiku about crows", requester="ada")
    worker.run_pending()
    body = Client().get(f"/api/lists/{todo.list_id}").json()
    assert body["status"] == "finished" and body["items"][0]["stage"] == "answered"
    assert Client().get("/api/lists/Lnope").status_code == 404


def test_a_flight_whose_landing_hit_a_locked_database_flies_again_and_lands(monkeypatch):
    """The take-off committed, then the landing raised OperationalError: the retry must fly
    the same sortie again (it is this process's own), not leave it in the air for good."""
    from django.db.utils import OperationalError

    from nests.actions.lists import flights

    trust_everyone()
    todo = post_list("write a haiku about crows", requester="ada")
    real_land = flights.land_sortie
    failures = iter([True])

    def flaky_land(*args, **kwargs):
        if next(failures, False):
            raise OperationalError("database is locked")
        return real_land(*args, **kwargs)

    monkeypatch.setattr(flights, "land_sortie", flaky_land)
    monkeypatch.setattr("nests.tasks.RETRY_PAUSE_S", 0)
    worker.run_pending()
    todo.refresh_from_db()
    events = stream(todo.list_id)
    assert [n for n, _ in events][-1] == "list.finished"
    assert not Sortie.objects.filter(todo_list=todo, status=Sortie.Status.FLYING).exists()
    sentry_flights = [p for p in named(events, "crow.flying") if p["crow"] == "Sentry"]
    assert len(sentry_flights) == 1


def test_a_split_item_with_no_crow_able_to_fly_is_skipped_and_the_verdict_answers_204():
    from flock.models import Crow

    todo = post_list("write the intro, fix the build, update the docs", requester="ada")
    worker.run_pending()
    (item,) = todo.items.all()
    Crow.objects.exclude(role__in=("sentry", "elder")).update(status=Crow.Status.QUARANTINED)
    response = Client().post(
        "/api/verdicts", {"item_id": item.item_id, "target": "triage", "approve": True},
        content_type="application/json",
    )
    assert response.status_code == 204
    worker.run_pending()
    skipped = named(stream(todo.list_id), "item.skipped")
    assert skipped and skipped[0]["reason"] == "failure"


def test_finishing_a_list_keeps_retrying_while_the_database_is_unwell(monkeypatch):
    """finish_list failing more often than the retry count must not leave the list open."""
    from django.db.utils import OperationalError

    import nests.actions.lists as lists_actions

    trust_everyone()
    real_finish = lists_actions.finish_list
    failures = iter(range(40))

    def flaky_finish(*args, **kwargs):
        if next(failures, None) is not None:
            raise OperationalError("database is locked")
        return real_finish(*args, **kwargs)

    monkeypatch.setattr(lists_actions, "finish_list", flaky_finish)
    monkeypatch.setattr("nests.tasks.RETRY_PAUSE_S", 0)
    todo = run_list("write a haiku about crows")
    assert [n for n, _ in stream(todo.list_id)][-1] == "list.finished"
