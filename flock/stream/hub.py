"""Process-local fan-out of published events to open SSE streams.

Events reach a process's hub by one of three doors, and any of them is enough because a
stream re-reads the database whenever it is unsure:
- in-process: `publish` hands the event to the hub's event loop directly;
- across processes, when REDIS_URL is set: `publish` sends it to one channel-layer
  group that every server process's hub listens to (one layer message per process,
  not per connection: the stock per-consumer group fan-out is O(N^2) in memory);
- a poll: while any stream is open, the hub looks at the newest event id every
  CROWS_STREAM_POLL_S and wakes every stream if rows appeared that no doorbell announced
  (an event written by a management command or a db_worker without Redis, or a
  message a channel layer dropped).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections import deque
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import close_old_connections
from django.db.models import Max

from flock.events import Published

log = logging.getLogger("crows.stream")

def _group_name() -> str:
    # One group per database: two deployments sharing a Redis never hear each other's
    # events (Redis pub/sub channels are global, not per Redis database).
    db = settings.DATABASES["default"]
    where = f"{db.get('HOST', '')}:{db.get('PORT', '')}/{db.get('NAME', '')}"
    return "crows.events." + hashlib.sha1(where.encode()).hexdigest()[:12]

# A stream that falls this far behind stops queueing and catches up from the database.
INBOX_LIMIT = 512


class Subscriber:
    """One open stream's inbox. Lives on the hub's loop; touched only from that loop."""

    __slots__ = ("key", "pending", "behind", "wake")

    def __init__(self, key: str) -> None:
        self.key = key
        self.pending: deque[tuple[int, int, bytes]] = deque()
        self.behind = False
        self.wake = asyncio.Event()

    def offer(self, event_id: int, prev: int, frame: bytes) -> None:
        if len(self.pending) >= INBOX_LIMIT:
            self.behind = True
        else:
            self.pending.append((event_id, prev, frame))
        self.wake.set()

    def catch_up(self) -> None:
        self.behind = True
        self.wake.set()


def _newest_event_id() -> int:
    from flock.models import Event

    try:
        return Event.objects.aggregate(m=Max("id"))["m"] or 0
    finally:
        close_old_connections()


class Hub:
    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.groups: dict[str, set[Subscriber]] = {}
        self.count = 0
        self.last_seen = 0
        self._polled_newest = 0
        self._background: list[asyncio.Task[Any]] = []
        self._publisher_loop: asyncio.AbstractEventLoop | None = None
        self._publisher_lock = threading.Lock()

    # -- the loop side ------------------------------------------------------------

    def subscribe(self, key: str) -> Subscriber:
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            self._attach(loop)
        sub = Subscriber(key)
        self.groups.setdefault(key, set()).add(sub)
        self.count += 1
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        members = self.groups.get(sub.key)
        if members and sub in members:
            members.discard(sub)
            self.count -= 1
            if not members:
                del self.groups[sub.key]

    def deliver(self, published: Published) -> None:
        if published.id > self.last_seen:
            self.last_seen = published.id
        for key, prev in published.prev.items():
            for sub in self.groups.get(key, ()):
                sub.offer(published.id, prev, published.frame)

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        # A process serves one event loop (daphne's); tests may start a fresh one.
        self.loop = loop
        self.groups = {}
        self.count = 0
        self._background = [loop.create_task(self._poll())]
        if getattr(settings, "REDIS_URL", ""):
            self._background.append(loop.create_task(self._listen()))

    async def _poll(self) -> None:
        newest_read = sync_to_async(_newest_event_id, thread_sensitive=False)
        while True:
            await asyncio.sleep(settings.CROWS_STREAM_POLL_S)
            if not self.count:
                continue
            try:
                newest = await newest_read()
            except Exception:  # the database being briefly away must not kill the hub
                log.exception("stream poll failed")
                continue
            # Only rows seen by the previous poll and still unannounced count as missed:
            # a row committed a moment ago usually has its doorbell already on the way.
            if self._polled_newest > self.last_seen:
                self.last_seen = self._polled_newest
                for members in self.groups.values():
                    for sub in members:
                        sub.catch_up()
            self._polled_newest = newest

    async def _listen(self) -> None:
        layer = get_channel_layer()
        assert layer is not None
        while True:
            try:
                channel = await layer.new_channel()
                await layer.group_add(_group_name(), channel)
                while True:
                    message = await layer.receive(channel)
                    self.deliver(
                        Published(
                            id=message["id"],
                            name=message["name"],
                            frame=message["frame"],
                            prev=dict(message["prev"]),
                        )
                    )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("channel layer listener failed; retrying")
                await asyncio.sleep(1)

    # -- the publishing side (any thread) ------------------------------------------

    def publish(self, published: Published) -> None:
        """Ring the doorbell for a committed event. Never raises: the row is already safe."""
        try:
            if getattr(settings, "REDIS_URL", ""):
                self._publish_to_layer(published)
            elif self.loop is not None and not self.loop.is_closed():
                self.loop.call_soon_threadsafe(self.deliver, published)
        except Exception:
            log.exception("publishing event %s failed; streams will catch up by poll", published.id)

    def _publish_to_layer(self, published: Published) -> None:
        layer = get_channel_layer()
        assert layer is not None
        message = {
            "type": "crows.event",
            "id": published.id,
            "name": published.name,
            "frame": published.frame,
            "prev": published.prev,
        }
        asyncio.run_coroutine_threadsafe(layer.group_send(_group_name(), message), self._publisher())

    def _publisher(self) -> asyncio.AbstractEventLoop:
        # One long-lived loop per process sends to the layer, so a publish from a worker
        # thread neither blocks on the network nor opens a connection per event.
        with self._publisher_lock:
            if self._publisher_loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="crows-publisher", daemon=True).start()
                self._publisher_loop = loop
            return self._publisher_loop


hub = Hub()
publish = hub.publish
