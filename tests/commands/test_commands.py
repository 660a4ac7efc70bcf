"""Every management command through call_command, each with a bad-argument case: bad
arguments end in CommandError (a one-line message and a non-zero exit), never a traceback."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from flock.actions import record_flight
from flock.models import Crow, Event, Flight, JevTag, PrunedStream
from flock.stream.retention import stale_cursor_frame
from nests.models import TodoList
from tests.nests.test_lists_support import run_list, trust_everyone
from trust.models import Approval, Strike, TrustEntry
from trust.queries import trust_balance

pytestmark = pytest.mark.django_db


def run(*args: str, **options: object) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as error:
        run(*args)
    message = str(error.value)
    assert "\n" not in message.strip()
    return message


# --- flock, trust_report, trust_seed ------------------------------------------------------


def test_flock_lists_crows_with_status_role_model_trust_and_recent_flights():
    record_flight(crow="Pepper", provider="mock", model="mock", task="answer", ok=True, task_type="code")
    out = run("flock")
    for word in ("Pepper", "Elder", "sentry", "active", "mock", "writing", "chat", "1 (0 failed)", "flock"):
        assert word in out
    one = run("flock", "--crow", "pepper")
    assert "Pepper's latest flights" in one and "answer" in one
    assert "no crow named" in refused("flock", "--crow", "Nobody")
    assert "expected 0 or more" in refused("flock", "--hours", "-1")


def test_trust_report_shows_levels_per_holder_and_task_type():
    from trust.actions import seed_trust

    seed_trust("Pepper", task_type="code", level=1)
    out = run("trust_report")
    assert "Pepper" in out and "1 regular" in out
    data = json.loads(run("trust_report", "--format", "json", "--holder", "pepper"))
    assert data["holders"]["Pepper"]["code"]["level"] == 1
    assert "unknown holder" in refused("trust_report", "--holder", "Nobody")
    assert "invalid choice" in refused("trust_report", "--format", "xml")


def test_trust_seed_says_who_seeded_in_the_events(capture_events):
    with capture_events() as events:
        run("trust_seed", "--holder", "Pepper", "--task-types", "code", "--level", "1")
    (changed,) = events.named("trust.changed")
    assert (changed["holder"], changed["to"], changed["by"]) == ("Pepper", 1, "trust_seed")


def test_trust_seed_trusts_nobody_by_default_and_validates_holders_and_levels():
    assert "--holder" in refused("trust_seed")
    assert TrustEntry.objects.count() == 0
    assert "unknown holder" in refused("trust_seed", "--holder", "Ghost")
    assert "not both" in refused("trust_seed", "--holder", "Pepper", "--all")
    assert "invalid choice: 7" in refused("trust_seed", "--all", "--level", "7")
    assert "unknown task types" in refused("trust_seed", "--all", "--task-types", "juggling")
    out = run("trust_seed", "--holder", "Pepper", "--task-types", "code", "--dry-run")
    assert "6 entries would be appended" in out and TrustEntry.objects.count() == 0
    out = run("trust_seed", "--holder", "Pepper,flock", "--task-types", "code", "--level", "1")
    assert trust_balance("Pepper", "code")[0] == 1 and trust_balance("flock", "code")[0] == 1
    assert trust_balance("Hugin", "code")[0] == 0
    run("trust_seed", "--all", "--task-types", "chat")
    assert trust_balance("Hugin", "chat")[0] == 2


# --- expire_approvals ---------------------------------------------------------------------


def test_expire_approvals_times_out_what_is_past_its_deadline_now(capture_events):
    todo = run_list("write a haiku about crows")
    approval = Approval.objects.get(list_id=todo.list_id)
    assert "timed out 0" in run("expire_approvals")
    Approval.objects.update(deadline=timezone.now() - timedelta(seconds=1))
    assert "would time out 1" in run("expire_approvals", "--dry-run")
    with capture_events() as events:
        out = run("expire_approvals")
    assert f"timed out 1: {approval.item_id} (triage)" in out
    assert [p["verdict"] for p in events.named("verdict")] == ["timeout"]
    assert "item.skipped" in events.names()
    assert "unrecognized arguments" in refused("expire_approvals", "--now")


# --- prune and stream.reset --------------------------------------------------------------


def _age(days: int) -> None:
    old = timezone.now() - timedelta(days=days)
    Event.objects.update(created_at=old)
    Flight.objects.update(created_at=old)
    JevTag.objects.update(created_at=old)
    TodoList.objects.filter(status="finished").update(finished_at=old)


def test_prune_never_removes_an_open_lists_events_and_deletes_what_is_past_retention():
    open_list = run_list("write a haiku about crows")  # waits for the owner: still open
    trust_everyone()
    done = run_list("write a limerick about rooks")
    assert TodoList.objects.get(pk=done.pk).status == "finished"
    record_flight(crow="Hugin", provider="mock", model="mock", task="chat", ok=True)
    now = timezone.now()
    Strike.objects.create(key="requester:bob", kind="list", cooldown_s=60, at=now, until=now, message="Caw")
    open_events = set(Event.objects.filter(list_key=open_list.list_id).values_list("id", flat=True))
    _age(40)
    Strike.objects.update(at=now - timedelta(days=40), until=now - timedelta(days=40))

    before = Event.objects.count()
    out = run("prune", "--older-than", "30", "--dry-run")
    assert "dry run" in out and Event.objects.count() == before

    out = run("prune", "--older-than", "30", "--yes")  # everything finished is 40 days old: asked
    assert "deleted" in out
    assert set(Event.objects.values_list("id", flat=True)) == open_events
    assert TodoList.objects.filter(pk=open_list.pk).exists() and not TodoList.objects.filter(pk=done.pk).exists()
    assert not Event.objects.filter(list_key=done.list_id).exists()
    assert not Flight.objects.filter(list_id=done.list_id).exists() and not Flight.objects.filter(crow="Hugin", task="chat").exists()
    assert Flight.objects.filter(list_id=open_list.list_id).exists()
    assert Strike.objects.count() == 0
    # The open list still works: approving it now carries on as usual.
    assert Approval.objects.filter(list_id=open_list.list_id).exists()
    # Streams know how far they were pruned; the open list's stream was not.
    assert PrunedStream.objects.get(key="*").through_id > 0
    assert not PrunedStream.objects.filter(key=f"list:{open_list.list_id}").exists()


def test_prune_keeps_what_is_younger_than_retention():
    trust_everyone()
    run_list("write a limerick about rooks")
    before = Event.objects.count()
    run("prune", "--older-than", "30")
    assert Event.objects.count() == before


class Terminal(io.StringIO):
    """Standard input as a person at a terminal types it."""

    def isatty(self) -> bool:
        return True


def test_a_prune_that_takes_everything_finished_asks_first_and_says_what_it_will_delete(monkeypatch):
    trust_everyone()
    run_list("write a limerick about rooks")
    before = Event.objects.count()
    # Without a terminal: refused in one line, nothing deleted.
    message = refused("prune", "--older-than", "0")
    assert "deletes all finished history" in message and "--yes" in message
    assert Event.objects.count() == before and TodoList.objects.count() == 1
    # At a terminal: the plan first, then the question; anything but yes keeps everything.
    monkeypatch.setattr("sys.stdin", Terminal("no\n"))
    out = io.StringIO()
    with pytest.raises(CommandError, match="not confirmed"):
        call_command("prune", "--older-than", "0", stdout=out, stderr=io.StringIO())
    assert out.getvalue().index("Will delete") < out.getvalue().index("Type yes to delete")
    assert "lists" in out.getvalue() and Event.objects.count() == before
    monkeypatch.setattr("sys.stdin", Terminal("yes\n"))
    assert "rows deleted" in run("prune", "--older-than", "0")
    assert TodoList.objects.count() == 0


def test_a_prune_that_leaves_finished_history_does_not_ask():
    trust_everyone()
    run_list("write a limerick about rooks")
    old = run_list("write a haiku about rooks")
    TodoList.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(days=40))
    Event.objects.filter(list_key=old.list_id).update(created_at=timezone.now() - timedelta(days=40))
    out = run("prune", "--older-than", "30")
    assert "Will delete" in out and "rows deleted" in out
    assert list(TodoList.objects.values_list("list_id", flat=True)) != [old.list_id]
    assert not TodoList.objects.filter(pk=old.pk).exists() and TodoList.objects.count() == 1


def test_prune_refuses_bad_ages():
    assert "expected 0 or more" in refused("prune", "--older-than", "-1")
    assert "whole number" in refused("prune", "--older-than", "soon")
    assert "required" in refused("prune")


def test_a_cursor_older_than_what_is_kept_gets_a_stream_reset_frame():
    trust_everyone()
    run_list("write a limerick about rooks")
    first = Event.objects.order_by("id").first().id
    _age(10)
    run("prune", "--older-than", "5", "--yes")
    frame = stale_cursor_frame("", "", first)
    assert frame is not None
    payload = json.loads(frame.decode().split("data: ", 1)[1])
    assert payload["reason"] == "retention" and payload["cursor"] == first and payload["pruned_through"] > first
    # The frame's id is the cursor to go on from: the pruned mark (EVENTS.md: every SSE message has one).
    assert frame.startswith(f"id: {payload['pruned_through']}\nevent: stream.reset\ndata: ".encode())
    assert "ts" in payload
    newest = PrunedStream.objects.get(key="*").through_id
    assert stale_cursor_frame("", "", newest) is None


def test_a_pruned_lists_stream_still_opens_and_says_stream_reset():
    from flock.wiring import _list_has_events

    trust_everyone()
    todo = run_list("write a limerick about rooks")
    _age(10)
    run("prune", "--older-than", "5", "--yes")
    assert not Event.objects.filter(list_key=todo.list_id).exists()
    assert _list_has_events(todo.list_id) and not _list_has_events("Lnever")
    frame = stale_cursor_frame("list_key", todo.list_id, 0)
    assert frame is not None and json.loads(frame.decode().split("data: ", 1)[1])["list_id"] == todo.list_id


def test_stream_reset_is_in_the_state_capabilities(client):
    assert "stream.reset" in client.get("/api/state").json()["capabilities"]


# --- replay_list, replay_nest -------------------------------------------------------------


def test_replay_list_prints_the_lists_history_as_text_and_markdown():
    trust_everyone()
    todo = run_list("write a haiku about crows")
    text = run("replay_list", todo.list_id)
    assert "list started by ada" in text and "triaged" in text and "answered by" in text and "list finished" in text
    md = run("replay_list", todo.list_id, "--format", "md")
    assert md.startswith(f"# List {todo.list_id}") and "**item.answered**" in md and "\n  > " in md
    assert "no list" in refused("replay_list", "nope")
    assert "invalid choice" in refused("replay_list", todo.list_id, "--format", "pdf")


def test_replay_list_tells_the_owners_reasons_overrules_and_retries():
    from flock import worker
    from nests.actions.lists import retry_item
    from trust.actions import overrule_verdict

    trust_everyone()
    todo = run_list("write a haiku about crows")
    item_id = f"{todo.list_id}-1"
    overrule_verdict(item_id, reason="It rhymes; haiku do not.")
    retry_item(item_id, note="Five, seven, five.")
    worker.run_pending()
    text = run("replay_list", todo.list_id)
    assert f"{item_id} answer overruled by owner" in text
    assert "    reason: It rhymes; haiku do not." in text
    assert f"{item_id} retried by owner: attempt 2 (was overruled)" in text and "    note: Five, seven, five." in text
    assert f"{item_id} output verdict: auto, attempt 2" in text  # the retry's own verdict
    md = run("replay_list", todo.list_id, "--format", "md")
    assert "  > reason: It rhymes; haiku do not." in md


def test_replay_nest_prints_the_conversation():
    from nests.actions import post_message

    post_message("todo", author="owner", text="Good morning, flock")
    text = run("replay_nest", "todo")
    assert "todo-1 owner" in text and "Good morning, flock" in text
    md = run("replay_nest", "todo", "--format", "md", "--last", "1")
    assert md.startswith("# Nest todo") and "> Good morning, flock" in md
    assert "no nest" in refused("replay_nest", "attic")


# --- export_flightlog ---------------------------------------------------------------------


def test_export_flightlog_writes_csv_and_jsonl_since_a_moment(tmp_path: Path):
    record_flight(crow="Pepper", provider="mock", model="mock", task="answer", ok=True, tokens_in=5)
    old = record_flight(crow="Inky", provider="mock", model="mock", task="answer", ok=False, error="boom")
    Flight.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    rows = list(csv.DictReader(io.StringIO(run("export_flightlog", "--format", "csv"))))
    assert [r["crow"] for r in rows] == ["Pepper", "Inky"] and rows[0]["tokens_in"] == "5"
    lines = run("export_flightlog", "--format", "jsonl", "--since", "1d").splitlines()
    assert [json.loads(line)["crow"] for line in lines] == ["Pepper"]
    target = tmp_path / "flights.jsonl"
    assert "2 flights written" in run("export_flightlog", "--format", "jsonl", "--output", str(target))
    assert len(target.read_text().splitlines()) == 2
    since = (timezone.now() - timedelta(days=1)).date().isoformat()
    assert len(list(csv.DictReader(io.StringIO(run("export_flightlog", "--since", since))))) == 1
    assert "invalid choice" in refused("export_flightlog", "--format", "xml")
    assert "--since must be" in refused("export_flightlog", "--since", "last tuesday")


# --- load_personas ------------------------------------------------------------------------


def test_load_personas_updates_and_adds_crows_from_yaml_with_a_diff(tmp_path: Path, capture_events):
    path = tmp_path / "crows.yaml"
    path.write_text(
        "crows:\n"
        "  - name: Pepper\n    voice: Clipped and dry.\n    model: openai:gpt-4o-mini\n"
        "  - name: Nova\n    strength: data wrangling\n    persona: You are Nova.\n    task_types: [data]\n"
        "  - name: Hugin\n    epithet: " + Crow.objects.get(name="Hugin").epithet + "\n"
    )
    with capture_events() as events:
        out = run("load_personas", str(path))
    assert "~ Pepper" in out and "voice" in out and "Clipped and dry." in out
    assert "+ Nova" in out and "= Hugin" in out
    assert "1 crow(s) were added, 1 updated, 1 unchanged" in out
    # Pepper's new model is a model pick, scored like every other (docs/GOVERNANCE.md).
    assert events.names() == ["crow.updated", "orchestration.decided", "crow.hatched"]
    assert Crow.objects.get(name="Pepper").model == "openai:gpt-4o-mini"
    assert Crow.objects.get(name="Nova").task_types == ["data"]


def test_load_personas_is_all_or_nothing_and_reports_every_problem(tmp_path: Path):
    path = tmp_path / "crows.json"
    path.write_text(json.dumps([
        {"name": "Pepper", "voice": "Changed."},
        {"name": "Nova"},
        {"name": "Inky", "model": "skynet:1", "mood": "grim"},
    ]))
    message = refused("load_personas", str(path))
    assert "nothing loaded" in message and "Nova" in message and "mood" in message
    assert "skynet" in message  # the unknown field did not hide the bad model beside it
    assert Crow.objects.get(name="Pepper").voice != "Changed."
    path.write_text(json.dumps([{"name": "Owner", "strength": "x"}, {"name": 123, "voice": 5}]))
    message = refused("load_personas", str(path))
    assert "3 problem(s)" in message and "'Owner' is a reserved name" in message, message
    assert "crow #2: name must be" in message and "crow #2: voice" in message, message
    assert not Crow.objects.filter(name="Nova").exists()
    path.write_text("[{name: Pepper, voice: [unclosed")
    path.rename(tmp_path / "bad.yaml")
    assert "not valid YAML" in refused("load_personas", str(tmp_path / "bad.yaml"))
    assert "cannot read" in refused("load_personas", str(tmp_path / "missing.yaml"))


def test_load_personas_dry_run_changes_nothing(tmp_path: Path):
    path = tmp_path / "crows.json"
    path.write_text(json.dumps({"crows": [{"name": "Pepper", "voice": "Changed."}]}))
    out = run("load_personas", str(path), "--dry-run")
    assert "Changed." in out and "would be" in out
    assert Crow.objects.get(name="Pepper").voice != "Changed."


# --- backup -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_backup_writes_a_copy_that_opens_and_holds_every_event(tmp_path: Path):
    trust_everyone()
    run_list("write a haiku about crows")
    target = tmp_path / "copy.sqlite3"
    out = run("backup", str(target))
    events = Event.objects.count()
    assert f"backed up {events} events" in out
    copy = sqlite3.connect(target)
    assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert copy.execute("SELECT count(*) FROM flock_event").fetchone()[0] == events
    ids = {row[0] for row in copy.execute("SELECT id FROM flock_event")}
    assert ids == set(Event.objects.values_list("id", flat=True))
    copy.close()
    assert "exists" in refused("backup", str(target))
    assert "does not exist" in refused("backup", str(tmp_path / "no" / "such" / "dir" / "x.sqlite3"))
    (tmp_path / "a-file").write_text("")
    assert "is not a directory" in refused("backup", str(tmp_path / "a-file" / "x.sqlite3"))
    into_dir = run("backup", str(tmp_path))
    assert "crows-" in into_dir
    # A path ending in / names a directory: made if its parent exists, never a file.
    made = run("backup", f"{tmp_path / 'nightly'}/")
    assert (tmp_path / "nightly").is_dir() and len(list((tmp_path / "nightly").glob("crows-*.sqlite3"))) == 1
    assert "nightly" in made
    assert "does not exist" in refused("backup", f"{tmp_path / 'no' / 'such'}/")
    assert not (tmp_path / "no").exists()


def test_backup_on_postgresql_prints_the_pg_dump_line():
    from flock.management.commands.backup import Command

    line = Command._pg_dump_line({"NAME": "crows", "HOST": "db", "PORT": 5432, "USER": "owner"}, "/backups/crows.dump")
    assert "pg_dump --format=custom --file=/backups/crows.dump --host=db --port=5432 --username=owner crows" in line


# --- the daily prune and the new event names -----------------------------------------------


def test_retention_days_keeps_exactly_one_daily_prune_queued(settings):
    from django_tasks_db.models import DBTaskResult

    from nests.tasks_retention import prune_task, schedule_retention

    def queued() -> int:
        return DBTaskResult.objects.filter(task_path=prune_task.module_path, status="READY").count()

    settings.CROWS_RETENTION_DAYS = 0
    assert schedule_retention() is False and queued() == 0
    settings.CROWS_RETENTION_DAYS = 30
    assert schedule_retention() is True
    assert schedule_retention() is False  # a restart does not add a second chain
    assert queued() == 1
    assert prune_task.call() == "pruned 0"
    # The run queued tomorrow's.
    assert queued() == 2
    tomorrow = DBTaskResult.objects.filter(task_path=prune_task.module_path).order_by("-run_after").first()
    assert tomorrow.run_after > timezone.now() + timedelta(hours=23)


def test_the_new_event_names_are_capabilities(client):
    capabilities = client.get("/api/state").json()["capabilities"]
    for name in ("stream.reset", "crow.updated", "nest.members_changed", "requester.cooldown_lifted", "trust.changed"):
        assert name in capabilities


def test_update_crow_emits_crow_updated_with_changes_previous_and_by(capture_events):
    from flock.actions import update_crow
    from flock.errors import BadInput, Conflict, NotFound

    with capture_events() as events:
        update_crow("Pepper", by="ada", voice="Dry.", model="anthropic:claude-x")
        update_crow("Pepper", by="ada", voice="Dry.")  # no change: no event
    (payload,) = events.named("crow.updated")
    assert payload["crow"] == "Pepper" and payload["by"] == "ada"
    assert payload["changes"] == {"voice": "Dry.", "model": "anthropic:claude-x"}
    assert set(payload["previous"]) == {"voice", "model"} and payload["previous"]["model"] == ""
    assert payload["model"] == "anthropic:claude-x" and "ts" in payload
    with pytest.raises(BadInput):
        update_crow("Pepper", by="ada", status="retired")
    with pytest.raises(BadInput):
        update_crow("Pepper", by="ada", persona="   ")
    with pytest.raises(NotFound):
        update_crow("Ghost", by="ada", voice="x")
    from flock.actions import retire_crow

    retire_crow("Rook", retired_by="ada")
    with pytest.raises(Conflict):
        update_crow("Rook", by="ada", voice="x")


COMMANDS = [
    "flock", "expire_approvals", "prune", "replay_list", "replay_nest", "export_flightlog",
    "trust_report", "load_personas", "backup", "trust_seed",
]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_explains_itself_with_help(name):
    from django.core.management import get_commands, load_command_class

    command = load_command_class(get_commands()[name], name)
    text = command.create_parser("manage.py", name).format_help()
    assert command.help.split()[0] in text and "usage: manage.py " + name in text


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["prune", "--older-than", "-1"], 2), (["trust_seed"], 1), (["replay_nest", "attic"], 1),
        # Numbers past what a date or the database holds: one line, not a traceback.
        (["flock", "--hours", "20000000"], 2), (["flock", "--crow", "Pepper", "--flights", "1" + "0" * 19], 2),
        (["replay_nest", "todo", "--last", "9" * 20], 2), (["export_flightlog", "--since", "1000000d"], 1),
        (["jev_eval", "x.jsonl", "--passes", "0"], 2), (["jev_eval", "/tmp"], 1),
        (["db_worker", "--batch", "--threads", "0"], 2), (["backup", ""], 1),
        # Stock options the pool would ignore: refused by name, not run without.
        (["db_worker", "--batch", "--queue-name", "nope"], 1), (["db_worker", "--batch", "--interval", "3"], 1), (["backup", "/nonexistent/dir/"], 1),
    ],
)
def test_from_the_shell_a_bad_argument_is_one_line_and_a_non_zero_exit(sqlite_template, tmp_path: Path, args: list[str], status: int):
    import subprocess

    from tests.support.server import PYTHON, ROOT, base_env

    env = base_env(CROWS_DATA_DIR=str(sqlite_template.fresh_dir(f"{tmp_path.name}-cli")))
    result = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == status
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "command", [["backup", "{db}", "--force"], ["backup", "{db}-wal", "--force"], ["export_flightlog", "-o", "{db}"]],
)
def test_no_command_writes_over_the_live_database(sqlite_template, tmp_path: Path, command: list[str]):
    import subprocess
    import sys

    from tests.support.server import ROOT, base_env

    data = sqlite_template.fresh_dir(f"{tmp_path.name}-live")  # a copy of the migrated template
    env = base_env(CROWS_DATA_DIR=str(data))
    db = data / "crows.sqlite3"
    before = db.read_bytes()
    result = subprocess.run(
        [sys.executable, "manage.py", *[part.format(db=db) for part in command]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode != 0 and "live database's own file" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0
    assert db.read_bytes() == before


# --- files, not paths: links to the database, devices, failures half-way ------------------

WRITERS = [
    ["backup", "{target}", "--force"], ["export_flightlog", "-o", "{target}"],
    ["replay_list", "L1", "-o", "{target}"], ["replay_nest", "todo", "-o", "{target}"],
]


@pytest.mark.parametrize("link", ["hard", "symbolic"])
@pytest.mark.parametrize("command", WRITERS, ids=lambda c: c[0])
def test_a_link_to_the_database_is_the_database_to_every_command_that_writes(
    sqlite_template, tmp_path: Path, command: list[str], link: str
):
    import os
    import subprocess

    from tests.support.server import PYTHON, ROOT, base_env

    data = sqlite_template.fresh_dir(f"{tmp_path.name}-links")
    env = base_env(CROWS_DATA_DIR=str(data))
    db = data / "crows.sqlite3"
    target = tmp_path / "innocent-looking.csv"
    (os.link if link == "hard" else os.symlink)(db, target)
    before = db.read_bytes()
    result = subprocess.run(
        [PYTHON, "manage.py", *[part.format(target=target) for part in command]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1 and "live database's own file" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert db.read_bytes() == before
    still = sqlite3.connect(db)
    assert still.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    assert still.execute("SELECT count(*) FROM flock_crow").fetchone()[0] > 0
    still.close()


@pytest.mark.parametrize("command", WRITERS, ids=lambda c: c[0])
def test_a_device_as_the_output_is_one_line(sqlite_template, tmp_path: Path, command: list[str]):
    import subprocess

    from tests.support.server import PYTHON, ROOT, base_env

    env = base_env(CROWS_DATA_DIR=str(sqlite_template.fresh_dir(f"{tmp_path.name}-full")))
    args = [part.format(target="/dev/full") for part in command]
    result = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "not a regular file" in result.stderr


def test_an_export_that_fails_half_way_leaves_the_old_file_whole(tmp_path: Path, monkeypatch):
    import errno

    from flock.management.commands import export_flightlog

    for n in range(3):
        record_flight(crow="Pepper", provider="mock", model="mock", task="answer", ok=True, tokens_in=n)
    target = tmp_path / "flights.csv"
    target.write_text("yesterday's export\n")
    real_row = export_flightlog.row
    calls = []

    def full_disk_after_one(flight):
        calls.append(flight)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_row(flight)

    monkeypatch.setattr(export_flightlog, "row", full_disk_after_one)
    message = refused("export_flightlog", "-o", str(target))
    assert "No space left on device" in message and str(target) in message
    assert target.read_text() == "yesterday's export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["flights.csv"]  # no partial file left
    monkeypatch.setattr(export_flightlog, "row", real_row)
    assert "3 flights written" in run("export_flightlog", "-o", str(target))
    assert len(target.read_text().splitlines()) == 4


def test_outputs_keep_their_permissions_and_links_and_missing_folders_are_one_line(tmp_path: Path):
    import os

    from nests.actions import post_message

    post_message("todo", author="owner", text="Good morning, flock")
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    kept.chmod(0o600)
    pointer = tmp_path / "latest.txt"
    pointer.symlink_to(kept)
    assert "lines written" in run("replay_nest", "todo", "-o", str(pointer))
    assert pointer.is_symlink() and "Good morning, flock" in kept.read_text()
    assert oct(os.stat(kept).st_mode & 0o777) == oct(0o600)
    message = refused("replay_nest", "todo", "-o", str(tmp_path / "no" / "such" / "t.txt"))
    assert "No such file or directory" in message
