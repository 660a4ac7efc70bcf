"""GET /api/events: replay after a cursor, then live, with no gap and no duplicate.

The order of work is what makes it gap-free: subscribe to the hub first (so nothing
published from now on is missed), then send the stored backlog after the cursor, then
live events. A live event is sent straight away only when its stream's previous event id
is one the client already has; otherwise the missing range is read from the database.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.http import AsyncHttpConsumer
from django.conf import settings
from django.db import close_old_connections
from django.db.models import TextField
from django.db.models.functions import Cast

from flock.models import Event
from flock.stream.hub import Subscriber, hub
from flock.stream.retention import stale_cursor_frame

log = logging.getLogger("crows.stream")

PAGE = 1000
RETRY_MS = 2000

# Stream keys a client may ask for, with a check that the thing exists; registered by the
# app that owns it (flock cannot import nests).
_STREAM_KEYS: dict[str, Callable[[str], bool]] = {}


def register_stream_key(param: str, exists: Callable[[str], bool]) -> None:
    _STREAM_KEYS[param] = exists


class BadStream(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _read_after(column: str, key: str, after: int, limit: int) -> list[tuple[int, bytes]]:
    """The stream's stored events after `after`, as (id, rendered frame).

    The payload is sent as the text the database holds: decoding it only to encode it again
    was most of a replay's time. On SQLite the text is byte-identical to a live frame's
    (CompactJSONEncoder); PostgreSQL's jsonb gives the same JSON with its own spacing."""
    try:
        rows = Event.objects.filter(id__gt=after).order_by("id")
        if column:
            rows = rows.filter(**{column: key})
        rows = rows.annotate(data=Cast("payload", TextField())).values_list("id", "name", "data")[:limit]
        return [(i, f"id: {i}\nevent: {n}\ndata: {d}\n\n".encode()) for i, n, d in rows]
    finally:
        close_old_connections()


def _newest_id() -> int:
    try:
        last = Event.objects.order_by("-id").values_list("id", flat=True).first()
        return last or 0
    finally:
        close_old_connections()


def _check_exists(param: str, value: str) -> bool:
    try:
        return _STREAM_KEYS[param](value)
    finally:
        close_old_connections()


class EventStreamConsumer(AsyncHttpConsumer):
    # The hub is this process's only channel-layer listener; a stream needs no channel.
    channel_layer_alias = "crows-no-layer"

    async def dispatch(self, message: dict) -> None:
        # The stock dispatch hops to the thread executor on every message to close old
        # connections; this consumer touches the database only in explicit reads.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def http_request(self, message: dict) -> None:
        if message.get("more_body"):
            return
        self.sub: Subscriber | None = None
        self.task: asyncio.Task[None] | None = None
        try:
            column, key, cursor = await self._parse()
        except BadStream as bad:
            body = json.dumps({"message": bad.message}).encode()
            await self.send_response(
                bad.status, body, headers=[(b"Content-Type", b"application/json")]
            )
            raise StopConsumer() from None

        self.sub = hub.subscribe("*" if not column else f"{column.split('_')[0]}:{key}")
        if cursor is None:
            # The firehose opened without a cursor starts live; a keyed stream replays from
            # its first event, since its client can only connect after creating it.
            cursor = await sync_to_async(_newest_id, thread_sensitive=False)() if not column else 0
        await self.send_headers(
            status=200,
            headers=[
                (b"Content-Type", b"text/event-stream; charset=utf-8"),
                (b"Cache-Control", b"no-cache"),
                (b"X-Accel-Buffering", b"no"),
            ],
        )
        # Headers leave only with the first body chunk.
        await self.send_body(f"retry: {RETRY_MS}\n: connected\n\n".encode(), more_body=True)
        self.task = asyncio.ensure_future(self._stream(column, key, cursor))

    async def http_disconnect(self, message: dict) -> None:
        await self._close()
        raise StopConsumer()

    async def _close(self) -> None:
        if getattr(self, "task", None) is not None and not self.task.done():
            self.task.cancel()
        if getattr(self, "sub", None) is not None:
            hub.unsubscribe(self.sub)
            self.sub = None

    async def _parse(self) -> tuple[str, str, int | None]:
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if self.scope.get("method") not in ("GET", "HEAD"):
            raise BadStream(405, "the event stream only answers GET")
        given = [p for p in _STREAM_KEYS if p in query]
        if len(given) > 1:
            raise BadStream(400, f"ask for one stream at a time, not {' and '.join(given)}")
        column, key = "", ""
        if given:
            param = given[0]
            key = query[param][-1].strip()
            if not key:
                raise BadStream(400, f"{param} must not be empty")
            if not await sync_to_async(_check_exists, thread_sensitive=False)(param, key):
                raise BadStream(404, f"no such {param.removesuffix('_id')}: {key!r}")
            column = "list_key" if param == "list_id" else "nest_key"
        # A browser's EventSource reconnects to the same URL with Last-Event-ID set to
        # the last id it saw, so the header wins over a `since` left in the URL.
        cursor_text = query["since"][-1].strip() if "since" in query else None
        for name, value in self.scope.get("headers", []):
            if name.lower() == b"last-event-id" and value.strip():
                cursor_text = value.decode("latin-1").strip()
        if cursor_text is None or cursor_text == "":
            return column, key, None
        if not cursor_text.isdigit():
            raise BadStream(400, f"the cursor must be a non-negative whole number, got {cursor_text[:40]!r}")
        return column, key, int(cursor_text)

    async def _stream(self, column: str, key: str, cursor: int) -> None:
        sub = self.sub
        assert sub is not None
        read_after = sync_to_async(_read_after, thread_sensitive=False)
        self.last_sent = cursor

        async def catch_up(until: int | None = None) -> None:
            while True:
                rows = await read_after(column, key, self.last_sent, PAGE)
                if until is not None:
                    rows = [r for r in rows if r[0] <= until]
                if not rows:
                    return
                await self.send_body(b"".join(frame for _, frame in rows), more_body=True)
                self.last_sent = rows[-1][0]
                if len(rows) < PAGE or (until is not None and self.last_sent >= until):
                    return

        try:
            # A cursor older than what retention kept: say so before the kept backlog.
            reset = await sync_to_async(stale_cursor_frame, thread_sensitive=False)(column, key, cursor)
            if reset:
                await self.send_body(reset, more_body=True)
            await catch_up()
            heartbeat = settings.CROWS_HEARTBEAT_S
            while True:
                try:
                    await asyncio.wait_for(sub.wake.wait(), timeout=heartbeat)
                except TimeoutError:
                    await self.send_body(b": ping\n\n", more_body=True)
                    continue
                sub.wake.clear()
                if sub.behind:
                    sub.behind = False
                    sub.pending.clear()
                    await catch_up()
                    continue
                chunk: list[bytes] = []
                while sub.pending:
                    event_id, prev, frame = sub.pending.popleft()
                    if event_id <= self.last_sent:
                        continue
                    if prev <= self.last_sent:
                        chunk.append(frame)
                        self.last_sent = event_id
                        continue
                    # A gap: an earlier event of this stream has not reached us yet (its
                    # doorbell is still on the way, or was lost). The database has it.
                    if chunk:
                        await self.send_body(b"".join(chunk), more_body=True)
                        chunk = []
                    await catch_up(until=event_id)
                if chunk:
                    await self.send_body(b"".join(chunk), more_body=True)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("event stream failed")
            await self._close()
            try:
                await self.send_body(b"", more_body=False)
            except Exception:
                pass
