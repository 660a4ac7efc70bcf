"""The bare-Channels baseline that bench/stream.py measures beside so-many-crows.

Served by daphne with the project's own Django settings (`daphne bench.baseline_asgi:application`
from the project root), it answers the same paths the bench uses against the real app, with
nothing but stock Channels pieces:

- GET /api/events?nest_id=X: a stock `AsyncHttpConsumer` per client, `group_add`ed to one
  group on the settings' channel layer (the stock `InMemoryChannelLayer` without REDIS_URL);
  each group message is forwarded as an SSE frame. As measured (docs/PERFORMANCE.md, Stream), the stream loop runs
  in a task so the consumer's dispatch loop keeps receiving group messages and disconnects.
- GET /api/events?nest_id=X&since=N: a bare replay consumer that reads the stored event rows
  after N (the same rows the real app replays) in pages and sends them as frames, then ends.
- POST /api/nests/X/messages: one row inserted into a table of its own (for fairness: the
  real endpoint writes too), then `group_send` of the frame; answers 201.
- GET /api/state: 200, for the bench's start-up check.

It writes nothing the app owns: its inserts go to `bench_baseline_message`, created here.

With BENCH_LEAN_LAYER=1 it is the *lean* baseline: the same consumers on `LeanLayer`, an
in-process layer without the stock InMemoryChannelLayer's per-send cost (a deep copy of
every message, a task per group member, and a walk over every member to expire old ones:
O(N^2) per fan-out). `group_send` puts the one message on each member's queue, so the
comparison with the app is fair to bare Channels.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from urllib.parse import parse_qs

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crows_site.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

get_asgi_application()  # sets Django up (apps, settings) before models are imported

from channels.db import database_sync_to_async  # noqa: E402
from channels.exceptions import StopConsumer  # noqa: E402
from channels.generic.http import AsyncHttpConsumer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.urls import path  # noqa: E402

from flock.models import Event  # noqa: E402  (read only, for replay)


class LeanLayer:
    """A minimal in-process channel layer: one asyncio.Queue per channel, no copies, no expiry."""

    extensions = ["groups"]

    def __init__(self) -> None:
        self.channels: dict[str, asyncio.Queue] = {}
        self.groups: dict[str, set[str]] = {}
        self._n = 0

    async def new_channel(self, prefix: str = "specific.") -> str:
        self._n += 1
        name = f"{prefix}lean!{self._n}"
        self.channels[name] = asyncio.Queue()
        return name

    async def send(self, channel: str, message: dict) -> None:
        queue = self.channels.get(channel)
        if queue is not None:
            queue.put_nowait(message)

    async def receive(self, channel: str) -> dict:
        queue = self.channels.get(channel)
        if queue is None:
            queue = self.channels[channel] = asyncio.Queue()
        return await queue.get()

    async def group_add(self, group: str, channel: str) -> None:
        self.groups.setdefault(group, set()).add(channel)

    async def group_discard(self, group: str, channel: str) -> None:
        members = self.groups.get(group)
        if members is not None:
            members.discard(channel)
        self.channels.pop(channel, None)

    async def group_send(self, group: str, message: dict) -> None:
        for channel in self.groups.get(group, ()):
            queue = self.channels.get(channel)
            if queue is not None:
                queue.put_nowait(message)

    async def flush(self) -> None:
        self.channels.clear()
        self.groups.clear()

    async def close(self) -> None:
        pass

    def valid_channel_name(self, name: str, receive: bool = False) -> bool:
        return True

    def valid_group_name(self, name: str) -> bool:
        return True


if os.environ.get("BENCH_LEAN_LAYER") == "1":
    from channels.layers import channel_layers

    channel_layers.backends["default"] = LeanLayer()

TABLE = "bench_baseline_message"
PAGE = 1000
SSE_HEADERS = [
    (b"Content-Type", b"text/event-stream; charset=utf-8"),
    (b"Cache-Control", b"no-cache"),
]
PREAMBLE = b"retry: 2000\n: connected\n\n"


def _create_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " nest TEXT NOT NULL, author TEXT NOT NULL, text TEXT NOT NULL, created_at TEXT NOT NULL)"
        )
    connection.close()


_create_table()


def _frame(event_id: int, name: str, payload: dict) -> bytes:
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return f"id: {event_id}\nevent: {name}\ndata: {data}\n\n".encode()


def _query(scope: dict) -> dict[str, str]:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return {k: v[-1] for k, v in query.items()}


def _group(nest: str) -> str:
    return f"baseline.nest.{nest}"


class GroupStream(AsyncHttpConsumer):
    """Live only: one stock consumer per client, one group per nest."""

    async def http_request(self, message: dict) -> None:
        if message.get("more_body"):
            return
        self.group = _group(_query(self.scope).get("nest_id", "todo"))
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.send_headers(status=200, headers=SSE_HEADERS)
        await self.send_body(PREAMBLE, more_body=True)
        self.task = asyncio.ensure_future(self._stream())

    async def _stream(self) -> None:
        heartbeat = settings.CROWS_HEARTBEAT_S
        while True:
            try:
                frame = await asyncio.wait_for(self.queue.get(), timeout=heartbeat)
            except TimeoutError:
                await self.send_body(b": ping\n\n", more_body=True)
                continue
            await self.send_body(frame, more_body=True)

    async def stream_frame(self, message: dict) -> None:
        self.queue.put_nowait(message["frame"])

    async def http_disconnect(self, message: dict) -> None:
        task = getattr(self, "task", None)
        if task is not None:
            task.cancel()
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)
        raise StopConsumer()


def _read_page(nest: str, after: int, limit: int) -> list[tuple[int, str, dict]]:
    rows = Event.objects.filter(nest_key=nest, id__gt=after).order_by("id")
    return list(rows.values_list("id", "name", "payload")[:limit])


class Replay(AsyncHttpConsumer):
    """Reads the stored rows after the cursor and sends them as frames, then ends."""

    async def handle(self, body: bytes) -> None:
        query = _query(self.scope)
        nest = query.get("nest_id", "todo")
        last = int(query.get("since", "0") or 0)
        await self.send_headers(status=200, headers=SSE_HEADERS)
        await self.send_body(PREAMBLE, more_body=True)
        read = database_sync_to_async(_read_page)
        while True:
            rows = await read(nest, last, PAGE)
            if not rows:
                break
            await self.send_body(b"".join(_frame(*row) for row in rows), more_body=True)
            last = rows[-1][0]
            if len(rows) < PAGE:
                break
        await self.send_body(b"", more_body=False)


def _insert(nest: str, author: str, text: str) -> bytes:
    now = datetime.now(UTC)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (nest, author, text, created_at) VALUES (%s, %s, %s, %s)",
            [nest, author, text, now.isoformat()],
        )
        row_id = cursor.lastrowid
    payload = {
        "nest_id": nest,
        "msg_id": f"{nest}-{row_id}",
        "author": author,
        "text": text,
        "ts": now.isoformat(timespec="milliseconds"),
    }
    return _frame(row_id, "nest.message", payload)


class Post(AsyncHttpConsumer):
    async def handle(self, body: bytes) -> None:
        nest = self.scope["url_route"]["kwargs"]["nest_id"]
        try:
            data = json.loads(body)
            author, text = str(data["author"]), str(data["text"])
        except (ValueError, KeyError, TypeError):
            await self.send_response(
                400, b'{"message":"bad body"}', headers=[(b"Content-Type", b"application/json")]
            )
            return
        frame = await database_sync_to_async(_insert)(nest, author, text)
        await self.channel_layer.group_send(_group(nest), {"type": "stream.frame", "frame": frame})
        await self.send_response(201, b'{"ok":true}', headers=[(b"Content-Type", b"application/json")])


class State(AsyncHttpConsumer):
    async def handle(self, body: bytes) -> None:
        await self.send_response(
            200, b'{"protocol":"baseline"}', headers=[(b"Content-Type", b"application/json")]
        )


_group_stream = GroupStream.as_asgi()
_replay = Replay.as_asgi()


async def events(scope: dict, receive, send) -> None:  # type: ignore[no-untyped-def]
    app = _replay if "since" in _query(scope) else _group_stream
    await app(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": URLRouter(
            [
                path("api/events", events),
                path("api/nests/<str:nest_id>/messages", Post.as_asgi()),
                path("api/state", State.as_asgi()),
            ]
        ),
    }
)
