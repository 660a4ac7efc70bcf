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
from django.db import DatabaseError, close_old_connections
from django.db.models import TextField
from django.db.models.functions import Cast

from flock.db import DATABASE_AWAY, RETRY_AFTER_S, database_away
from flock.models import Event
from flock.schemas import ID_MAX
from flock.stream.flow import Flow, give_memory_back
from flock.stream.hub import Subscriber, hub
from flock.stream.retention import ahead_cursor_frame, stale_cursor_frame

log = logging.getLogger("crows.stream")

# Replay pages: at most PAGE rows and about PAGE_BYTES, starting from PAGE_MIN rows until
# the stream has seen how large its events are.
PAGE = 1000
PAGE_MIN = 50
PAGE_BYTES = 256 * 1024
RETRY_MS = 2000

# Slow readers (docs/STREAM.md): a stream writes in pieces of at most CHUNK_BYTES, each only
# once the transport holds room for it under CROWS_STREAM_MAX_BUFFER_KB. A client that does
# not take enough bytes to make that room within DRAIN_GRACE_S is too far behind: its
# connection is dropped with its buffer, and it reconnects with Last-Event-ID.
CHUNK_BYTES = 64 * 1024
DRAIN_GRACE_S = 2.0
DRAIN_POLL_S = 0.02
# A stream whose buffer passed this size leaves freed memory behind it worth handing back.
TRIM_AFTER_BYTES = 256 * 1024
TRIM_DELAY_S = 0.5
_trim_pending = False


def _trim_soon() -> None:
    # Once per burst of closes: the transports free their buffers on the next reactor
    # turns, then one trim hands the pages back.
    global _trim_pending
    if _trim_pending:
        return
    _trim_pending = True

    def trim() -> None:
        global _trim_pending
        _trim_pending = False
        give_memory_back()

    asyncio.get_running_loop().call_later(TRIM_DELAY_S, trim)


# The largest event id there can be (a 64-bit signed id): the greatest cursor (docs/API.md).
CURSOR_MAX = 2**63 - 1


class TooFarBehind(Exception):
    pass

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


def _read_after(column: str, key: str, after: int, limit: int, upto: int) -> list[tuple[int, bytes]]:
    """The stream's stored events after `after` up to `upto` (the hub's released id: below
    it every id is final, docs/STREAM.md), as (id, rendered frame).

    The payload is sent as the text the database holds: decoding it only to encode it again
    was most of a replay's time. On SQLite the text is byte-identical to a live frame's
    (CompactJSONEncoder); PostgreSQL's jsonb gives the same JSON with its own spacing."""
    try:
        events = Event.objects.filter(id__gt=after, id__lte=upto).order_by("id")
        if column:
            events = events.filter(**{column: key})
        rows = events.annotate(data=Cast("payload", TextField())).values_list("id", "name", "data")[:limit]
        return [(i, f"id: {i}\nevent: {n}\ndata: {d}\n\n".encode()) for i, n, d in rows]
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
        self.flow = Flow(self.base_send)
        self.max_buffer = settings.CROWS_STREAM_MAX_BUFFER_KB * 1024
        self.peak_buffer = 0
        self.page_bytes = min(PAGE_BYTES, self.max_buffer // 2)
        self.page_rows = PAGE_MIN
        try:
            column, key, cursor = await self._parse()
            replay_only = self._replay_only()
        except BadStream as bad:
            body = json.dumps({"message": bad.message}).encode()
            headers = [(b"Content-Type", b"application/json")]
            if bad.status == 503:
                headers.append((b"Retry-After", str(RETRY_AFTER_S).encode()))
            await self.send_response(bad.status, body, headers=headers)
            raise StopConsumer() from None

        await hub.ready()
        self.sub = hub.subscribe("*" if not column else f"{column.split('_')[0]}:{key}")
        if cursor is None:
            # The firehose opened without a cursor starts live; a keyed stream replays from
            # its first event, since its client can only connect after creating it.
            cursor = hub.released if not column else 0
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
        if replay_only:
            self.task = asyncio.ensure_future(self._replay(column, key, cursor))
        else:
            self.task = asyncio.ensure_future(self._stream(column, key, cursor))

    async def http_disconnect(self, message: dict) -> None:
        await self._close()
        raise StopConsumer()

    async def _close(self) -> None:
        task: asyncio.Task[None] | None = getattr(self, "task", None)
        if task is not None and not task.done():
            task.cancel()
        sub: Subscriber | None = getattr(self, "sub", None)
        if sub is not None:
            hub.unsubscribe(sub)
            self.sub = None
        if getattr(self, "peak_buffer", 0) > TRIM_AFTER_BYTES:
            self.peak_buffer = 0
            _trim_soon()

    async def _room(self) -> None:
        """Wait until the transport holds at most half the limit; TooFarBehind if the client
        does not take enough within DRAIN_GRACE_S."""
        flow = self.flow
        if not flow.known or flow.unflushed() <= self.max_buffer // 2:
            return
        loop = asyncio.get_running_loop()
        give_up = loop.time() + DRAIN_GRACE_S
        while flow.unflushed() > self.max_buffer // 2:
            if loop.time() >= give_up:
                raise TooFarBehind()
            await asyncio.sleep(DRAIN_POLL_S)

    async def _send(self, data: bytes) -> None:
        """Write `data` as the transport makes room for it (module comment above); raises
        TooFarBehind for a client that does not make room in time."""
        flow = self.flow
        if not flow.known:
            await self.send_body(data, more_body=True)
            return
        loop = asyncio.get_running_loop()
        size = min(CHUNK_BYTES, self.max_buffer)
        for start in range(0, len(data), size):
            piece = data if len(data) <= size else data[start : start + size]
            queued = flow.unflushed()
            # An empty transport always takes a piece: pieces are never larger than the limit.
            if queued and queued + len(piece) > self.max_buffer:
                give_up = loop.time() + DRAIN_GRACE_S
                while queued and queued + len(piece) > self.max_buffer:
                    if loop.time() >= give_up:
                        raise TooFarBehind()
                    await asyncio.sleep(DRAIN_POLL_S)
                    queued = flow.unflushed()
            await self.send_body(piece, more_body=True)
            self.peak_buffer = max(self.peak_buffer, queued + len(piece))

    def _replay_only(self) -> bool:
        """`?replay=1`: send the stored backlog after the cursor and end the response
        (docs/STREAM.md, "One connection per browser"). Pages that share one live stream
        read their own room's history this way instead of holding a stream of their own."""
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if "replay" not in query:
            return False
        value = query["replay"][-1].strip()
        if value not in ("1", "0", ""):
            raise BadStream(400, f"replay must be 1 or 0, got {value[:40]!r}")
        return value == "1"

    async def _replay(self, column: str, key: str, cursor: int) -> None:
        """The backlog after `cursor` up to the hub's released id when the request came,
        then `stream.replayed` with that id (`upto`), then the end of the response: every
        event of this stream with an id <= `upto` has been sent, and the client follows
        what comes after from its live stream."""
        upto = hub.released
        read_after = sync_to_async(_read_after, thread_sensitive=False)
        last = cursor
        try:
            while last < upto:
                await self._room()
                rows = await read_after(column, key, last, self.page_rows, upto)
                if not rows:
                    break
                data = b"".join(frame for _, frame in rows)
                count, last = len(rows), rows[-1][0]
                self.page_rows = max(PAGE_MIN, min(PAGE, count * self.page_bytes // len(data)))
                await self._send(data)
            done = json.dumps({"upto": max(upto, cursor)}, separators=(",", ":"))
            await self._send(f"event: stream.replayed\ndata: {done}\n\n".encode())
            await self.send_body(b"", more_body=False)
        except asyncio.CancelledError:
            raise
        except TooFarBehind:
            self.flow.abort()
        except Exception:
            log.exception("event replay failed")
            try:
                await self.send_body(b"", more_body=False)
            except Exception:
                pass
        await self._close()

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
            if "\x00" in key:  # PostgreSQL cannot even compare a string holding one
                raise BadStream(400, f"{param} must not contain NUL characters")
            if len(key) > ID_MAX:  # as every identifier the API reads (docs/API.md)
                raise BadStream(400, f"{param} must be at most {ID_MAX} characters")
            try:
                exists = await sync_to_async(_check_exists, thread_sensitive=False)(param, key)
            except DatabaseError as exc:
                if database_away(exc):
                    raise BadStream(503, DATABASE_AWAY) from None
                raise
            if not exists:
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
        # ASCII digits only: `²` passes str.isdigit but not int().
        if not (cursor_text.isascii() and cursor_text.isdigit()):
            raise BadStream(400, f"the cursor must be a non-negative whole number, got {cursor_text[:40]!r}")
        # Event ids are 64-bit: a cursor past that range can name no event, ever (and int()
        # refuses over 4,300 digits). One merely ahead of the log is taken: the stream sends
        # what comes after it.
        digits = cursor_text.lstrip("0") or "0"
        if len(digits) > len(str(CURSOR_MAX)) or int(digits) > CURSOR_MAX:
            raise BadStream(400, f"the cursor must be at most {CURSOR_MAX}, got {cursor_text[:40]!r}")
        return column, key, int(digits)

    async def _stream(self, column: str, key: str, cursor: int) -> None:
        sub = self.sub
        assert sub is not None
        read_after = sync_to_async(_read_after, thread_sensitive=False)
        self.last_sent = cursor

        async def catch_up(until: int | None = None) -> None:
            while True:
                # Read a page only once the client has room for it: a stream waiting on a
                # slow client holds no page in memory, only what its transport holds.
                await self._room()
                asked = self.page_rows
                rows = await read_after(column, key, self.last_sent, asked, until or hub.released)
                if until is not None:
                    rows = [r for r in rows if r[0] <= until]
                if not rows:
                    return
                data = b"".join(frame for _, frame in rows)
                count, last = len(rows), rows[-1][0]
                del rows  # only one copy of the page waits on a slow client
                # Size the next page to about page_bytes, whatever the size of the events.
                self.page_rows = max(PAGE_MIN, min(PAGE, count * self.page_bytes // len(data)))
                await self._send(data)
                self.last_sent = last
                if count < asked or (until is not None and self.last_sent >= until):
                    return

        try:
            # A cursor older than what retention kept: say so before the kept backlog.
            reset = await sync_to_async(stale_cursor_frame, thread_sensitive=False)(column, key, cursor)
            if reset:
                await self.send_body(reset, more_body=True)
            # A cursor the log never reached: say so, and go on from the log's end. (One
            # at or below what this server has released is no such cursor: no read.)
            if cursor > hub.released:
                ahead, self.last_sent = await sync_to_async(ahead_cursor_frame, thread_sensitive=False)(
                    column, key, cursor
                )
                if ahead:
                    await self.send_body(ahead, more_body=True)
            await catch_up()
            heartbeat = settings.CROWS_HEARTBEAT_S
            while True:
                try:
                    await asyncio.wait_for(sub.wake.wait(), timeout=heartbeat)
                except TimeoutError:
                    await self._send(b": ping\n\n")
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
                        await self._send(b"".join(chunk))
                        chunk = []
                    await catch_up(until=event_id)
                if chunk:
                    await self._send(b"".join(chunk))
        except asyncio.CancelledError:
            raise
        except TooFarBehind:
            log.info(
                "closing a stream client more than %d KiB behind after event %s",
                self.max_buffer // 1024, self.last_sent,
            )
            self.flow.abort()
            await self._close()
        except Exception:
            log.exception("event stream failed")
            await self._close()
            try:
                await self.send_body(b"", more_body=False)
            except Exception:
                pass
