"""Retention on the stream's side: remembering how far each stream was pruned, and telling
a client whose cursor points into the pruned past (docs/OPERATING.md "Retention").

Pruning deletes old event rows (nests/retention.py decides which), so a client that
reconnects with an old `Last-Event-ID` would otherwise get a replay with a silent hole.
Each prune records, per stream key, the newest id it deleted; a stream opened with a
cursor below that mark first gets one `stream.reset` frame, then the kept events after
its cursor, then live events. The frame is sent to that client only and is not stored:
it says something about the connection, not about the flock.

A cursor above every id the log ever handed out (a database reset, or restored from an
older copy) gets a `stream.reset` too, with reason "ahead": the stream then goes on from
the log's newest id, where it would otherwise drop every new event up to the old cursor.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from django.db import close_old_connections, transaction
from django.db.models import Max, QuerySet
from django.utils import timezone

from flock.events import newest_id_handed_out, rfc3339
from flock.models import Event, PrunedStream
from flock.payloads import STREAM_RESET, StreamReset


def stream_key(column: str, key: str) -> str:
    """The hub's key for a stream: "*" for the firehose, "list:<id>" or "nest:<id>"."""
    return "*" if not column else f"{column.split('_')[0]}:{key}"


def reset_frame(column: str, key: str, reset: StreamReset, *, continue_from: int) -> bytes:
    """A `stream.reset` frame: the stream's list_id or nest_id, the reset's facts and
    `ts`, with an `id:` line, as every SSE message has (EVENTS.md): `continue_from`, the
    cursor the client goes on from (the pruned mark, or the log's newest id)."""
    payload: dict[str, object] = {}
    if column:
        payload["list_id" if column == "list_key" else "nest_id"] = key
    payload.update({**reset, "ts": rfc3339(timezone.now())})
    data = json.dumps(payload, separators=(",", ":"))
    return f"id: {continue_from}\nevent: {STREAM_RESET}\ndata: {data}\n\n".encode()


def stale_cursor_frame(column: str, key: str, cursor: int) -> bytes | None:
    """The `stream.reset` frame for a client at `cursor`, or None when nothing it has not
    seen was pruned. Its `id:` is the pruned mark: every event after it is kept."""
    try:
        through = (
            PrunedStream.objects.filter(key=stream_key(column, key)).values_list("through_id", flat=True).first()
        )
    finally:
        close_old_connections()
    if through is None or cursor >= through:
        return None
    reset = StreamReset(reason="retention", cursor=cursor, pruned_through=through)
    return reset_frame(column, key, reset, continue_from=through)


def ahead_cursor_frame(column: str, key: str, cursor: int) -> tuple[bytes | None, int]:
    """A cursor above every id the log ever handed out (the database was reset, or restored
    from an older copy): the `stream.reset` frame that says so, reason "ahead", and the
    cursor to go on from, the log's newest id, so the stream carries the events that come
    next instead of dropping every one up to the old cursor. (None, cursor) otherwise."""
    try:
        newest = newest_id_handed_out()
    finally:
        close_old_connections()
    if cursor <= newest:
        return None, cursor
    reset = StreamReset(reason="ahead", cursor=cursor, newest_id=newest)
    return reset_frame(column, key, reset, continue_from=newest), newest


def prune_marks(doomed: QuerySet[Event]) -> dict[str, int]:
    """For events about to be deleted: the newest doomed id per stream key they belong to."""
    marks: dict[str, int] = {}
    newest = doomed.aggregate(m=Max("id"))["m"]
    if newest is None:
        return marks
    marks["*"] = newest
    for column, prefix in (("list_key", "list"), ("nest_key", "nest")):
        rows = doomed.exclude(**{column: ""}).values(column).annotate(m=Max("id")).values_list(column, "m")
        for key, through in rows:
            marks[f"{prefix}:{key}"] = through
    return marks


def record_prune_marks(marks: Iterable[tuple[str, int]]) -> None:
    """Raise each stream's mark to at least the given id (marks never move back).

    Call it in the transaction that deletes the events, so a stream never sees the rows
    gone without the mark that explains it."""
    now = timezone.now()
    with transaction.atomic():
        for key, through in marks:
            mark, created = PrunedStream.objects.select_for_update().get_or_create(
                key=key, defaults={"through_id": through, "pruned_at": now}
            )
            if not created and through > mark.through_id:
                mark.through_id = through
                mark.pruned_at = now
                mark.save(update_fields=["through_id", "pruned_at"])
