"""The event log: emit is the only writer, runs inside the action's transaction, and
publishes only after commit."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NotRequired, TypedDict

import pytest
from django.db import transaction

from flock.events import Published, emit, register_event
from flock.models import Event

ROOT = Path(__file__).resolve().parents[2]


# Functional form: this module's annotations are strings, and TypedDict reads
# NotRequired only from real ones.
Ping = TypedDict("Ping", {"n": NotRequired[int]})  # noqa: UP013  (see above)


register_event("test.ping", Ping)


@pytest.fixture
def published(monkeypatch) -> list[Published]:
    seen: list[Published] = []
    monkeypatch.setattr("flock.stream.hub.publish", seen.append)
    return seen


def test_emit_refuses_to_run_outside_a_transaction(transactional_db):
    with pytest.raises(RuntimeError, match="inside an action"):
        emit("test.ping", {})


def test_emit_refuses_an_unregistered_event_name(db):
    with transaction.atomic(), pytest.raises(ValueError, match="unknown event"):
        emit("no.such.event", {})


def test_emit_refuses_a_payload_its_typeddict_does_not_declare(db):
    # The registered TypedDict is the payload's one shape: an undeclared field, or a
    # required one missing, stops the action before anything is written.
    with transaction.atomic(), pytest.raises(ValueError, match=r"undeclared \['m'\]"):
        emit("test.ping", {"m": 1})
    with transaction.atomic(), pytest.raises(ValueError, match=r"missing \['reason'\]"):
        emit("item.skipped", {"item_id": "L1-1"}, list_id="L1")
    assert not Event.objects.exists()


def test_event_is_published_only_after_commit(transactional_db, published):
    with transaction.atomic():
        event = emit("test.ping", {"n": 1}, list_id="L1")
        assert published == []
    assert [p.id for p in published] == [event.id]
    assert event.payload["list_id"] == "L1" and event.payload["ts"].endswith("Z")
    assert published[0].frame.startswith(f"id: {event.id}\nevent: test.ping\ndata: ".encode())


def test_rolled_back_event_is_neither_stored_nor_published(transactional_db, published):
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        emit("test.ping", {})
        raise ZeroDivisionError("the action failed after emitting")
    assert published == [] and not Event.objects.filter(name="test.ping").exists()


def test_each_event_names_the_streams_it_belongs_to(transactional_db, published):
    with transaction.atomic():
        a = emit("test.ping", {}, list_id="L1")
        b = emit("test.ping", {}, nest_id="N1")
        c = emit("test.ping", {}, list_id="L1", nest_id="N1")
    assert [p.keys for p in published] == [("*", "list:L1"), ("*", "nest:N1"), ("*", "list:L1", "nest:N1")]
    assert c.id > b.id > a.id


def _calls_in(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text())
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in names:
                hits.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    return hits


def test_only_actions_emit_and_only_emit_writes_events():
    """Events are written by flock.events.emit alone, and emit is called only from actions."""
    offenders = []
    for app in ("flock", "trust", "nests", "crows_site"):
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            rel = path.relative_to(ROOT).as_posix()
            is_action = "/actions" in rel or rel.endswith("actions.py")
            for hit in _calls_in(path, {"emit"}):
                if not is_action and rel != "flock/events.py":
                    offenders.append(hit)
            source = path.read_text()
            if rel != "flock/events.py" and ("Event.objects.create" in source or "Event.objects.bulk_create" in source):
                offenders.append(f"{rel} writes Event rows directly")
            if rel != "flock/events.py" and ("Event(" in source and "JevTag" not in source and ".save(" in source and "models.Event" in source):
                offenders.append(f"{rel} may save Event rows directly")
    assert offenders == []
