"""The one writer of the event log.

`emit` is called only from actions, inside their transaction. The row is the truth; the
publish after commit is only a doorbell for open streams, which read the database on
any doubt. To keep the stream gap-free, commit order must equal id order: SQLite's
IMMEDIATE transactions already serialise writers, and on PostgreSQL emit takes one
transaction-scoped advisory lock before inserting, so a later id never commits first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Max

from flock.models import Event

# Every SSE event name this build can emit; /api/state lists them as capabilities.
# Apps add theirs at import time with `register_event_names`.
EVENT_NAMES: list[str] = []

_ADVISORY_LOCK_KEY = 0x63726F7773  # "crows"


def register_event_names(*names: str) -> None:
    for name in names:
        if name not in EVENT_NAMES:
            EVENT_NAMES.append(name)


def lock_event_log() -> None:
    """Take the event log's transaction-scoped lock (PostgreSQL; SQLite's IMMEDIATE
    transactions already serialise writers). emit takes it before inserting; an action that
    locks rows and then emits takes it first, so every transaction takes the two in one
    order (advisory lock, then rows) and none deadlocks. Re-entrant within a transaction."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_ADVISORY_LOCK_KEY])


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Published:
    """What the doorbell carries: the rendered frame, plus for each stream it belongs to the
    id of that stream's previous event, so a client can tell whether it missed one."""

    id: int
    name: str
    frame: bytes
    prev: dict[str, int] = field(default_factory=dict)


def stream_keys(event: Event) -> list[str]:
    keys = ["*"]
    if event.list_key:
        keys.append(f"list:{event.list_key}")
    if event.nest_key:
        keys.append(f"nest:{event.nest_key}")
    return keys


def render_frame(event_id: int, name: str, payload: dict[str, Any]) -> bytes:
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return f"id: {event_id}\nevent: {name}\ndata: {data}\n\n".encode()


def emit(name: str, payload: dict[str, Any], *, list_id: str = "", nest_id: str = "") -> Event:
    """Append one event inside the caller's transaction and publish it once that commits.

    `list_id` puts the event on that list's stream (and into its payload, as EVENTS.md
    says every list event carries it); `nest_id` likewise for a nest's stream.
    """
    if not connection.in_atomic_block:
        raise RuntimeError("emit() must run inside an action's transaction.atomic block")
    if name not in EVENT_NAMES:
        raise ValueError(f"unknown event name {name!r}: register it with register_event_names")
    lock_event_log()

    now = datetime.now(UTC)
    body: dict[str, Any] = {}
    if list_id:
        body["list_id"] = list_id
    if nest_id:
        body["nest_id"] = nest_id
    body.update(payload)
    body["ts"] = rfc3339(now)

    prev: dict[str, int] = {"*": Event.objects.aggregate(m=Max("id"))["m"] or 0}
    if list_id:
        prev[f"list:{list_id}"] = (
            Event.objects.filter(list_key=list_id).aggregate(m=Max("id"))["m"] or 0
        )
    if nest_id:
        prev[f"nest:{nest_id}"] = (
            Event.objects.filter(nest_key=nest_id).aggregate(m=Max("id"))["m"] or 0
        )
    event = Event.objects.create(
        name=name, list_key=list_id, nest_key=nest_id, payload=body, created_at=now
    )
    published = Published(
        id=event.id, name=name, frame=render_frame(event.id, name, body), prev=prev
    )

    from flock.stream import hub

    transaction.on_commit(lambda: hub.publish(published))
    return event
