"""Process-local fan-out of published events to open SSE streams.

The hub releases events to its streams in id order, and only ids it knows are final
(flock.events.final_horizon): every id up to `released` is either offered to the streams
or known not to exist, and each offered event carries, per stream, the id of that
stream's previous event as far as this hub knows (an overestimate when it does not: the
stream then re-reads the gap from the database, which is always safe).

Events reach the hub by any of three doors; any one is enough, and one event arriving by
two doors is released once:
- in-process: `publish` hands the event to this process's hub directly, Redis or not, so a
  server delivers its own events at once even while Redis is down;
- across processes, when REDIS_URL is set: `publish` also sends it to one channel-layer
  group that every server process's hub listens to (one layer message per process);
- the database: when an id is missing below ids that arrived (a doorbell still on the way,
  lost, or a rolled-back id), and every CROWS_STREAM_POLL_S while streams are open, the hub
  reads the rows after `released` up to the final horizon and releases them. That is how
  events written by a db_worker or a management command without Redis, or during a Redis
  outage, reach the streams.
See docs/STREAM.md.
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
from django.db.models import TextField
from django.db.models.functions import Cast

from flock.events import Published, final_horizon, stream_keys
from flock.models import Event
from flock.stream.quiet_outage import PUBLISH_FAILURES, redis_unreachable

log = logging.getLogger("crows.stream")


def _group_name() -> str:
    # One group per database: two deployments sharing a Redis never hear each other's
    # events (Redis pub/sub channels are global, not per Redis database).
    db = settings.DATABASES["default"]
    where = f"{db.get('HOST', '')}:{db.get('PORT', '')}/{db.get('NAME', '')}"
    return "crows.events." + hashlib.sha1(where.encode()).hexdigest()[:12]


# A stream that falls this far behind stops queueing and catches up from the database.
INBOX_LIMIT = 512
# How long a missing id may stay missing before the hub asks the database about it.
GAP_WAIT_S = 0.05
# The database poll's beat, as a share of CROWS_STREAM_POLL_S (see _fill_loop).
POLL_BEAT = 0.8
# Rows one database read releases at most.
FILL_PAGE = 2000
# Stream keys whose last id the hub remembers; past this it forgets them all at once.
KEYS_REMEMBERED = 50_000


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


def _read_final_after(after: int) -> tuple[int, list[Published]]:
    """(horizon, events after `after` up to it): the horizon is read before the rows."""
    try:
        horizon = final_horizon()
        if horizon <= after:
            return horizon, []
        rows = (
            Event.objects.filter(id__gt=after, id__lte=horizon)
            .order_by("id")
            .annotate(data=Cast("payload", TextField()))
            .values_list("id", "name", "list_key", "nest_key", "data")[:FILL_PAGE]
        )
        found = [
            Published(
                id=i,
                name=n,
                frame=f"id: {i}\nevent: {n}\ndata: {d}\n\n".encode(),
                keys=stream_keys(lk, nk),
            )
            for i, n, lk, nk, d in rows
        ]
        if len(found) == FILL_PAGE:
            horizon = found[-1].id
        return horizon, found
    finally:
        close_old_connections()


def _horizon() -> int:
    try:
        return final_horizon()
    finally:
        close_old_connections()


class Hub:
    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.groups: dict[str, set[Subscriber]] = {}
        self.count = 0
        # Every id <= released is final and was offered (or predates this hub's start).
        self.released = 0
        self._ready: asyncio.Future[None] | None = None
        self._floor = 0  # a stream not in _last has its previous event at or below this
        self._last: dict[str, int] = {}
        self._waiting: dict[int, Published] = {}
        self._kick: asyncio.Event | None = None
        self._background: list[asyncio.Task[Any]] = []
        self._publisher_loop: asyncio.AbstractEventLoop | None = None
        self._publisher_lock = threading.Lock()

    # -- the loop side ------------------------------------------------------------

    async def ready(self) -> None:
        """Attach to the running loop and learn the final horizon once (before the first
        stream reads its backlog: `released` bounds every stream's database reads)."""
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            self._attach(loop)
        assert self._ready is not None
        if not self._ready.done():
            await asyncio.shield(self._ready)

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
        """An event arrived by a doorbell: release it, and any waiting after it, in order."""
        if published.id <= self.released or published.id in self._waiting:
            return
        self._waiting[published.id] = published
        if self._ready is not None and self._ready.done():
            self._drain()

    def _drain(self) -> None:
        while self._waiting:
            nxt = self._waiting.pop(self.released + 1, None)
            if nxt is None:
                # An id is missing below ones that arrived: ask the database soon.
                if self._kick is not None:
                    self._kick.set()
                return
            self._release(nxt)

    def _release(self, published: Published) -> None:
        last = self._last
        if len(last) > KEYS_REMEMBERED:
            self._floor = self.released
            last.clear()
        for key in published.keys:
            prev = last.get(key, self._floor)
            last[key] = published.id
            for sub in self.groups.get(key, ()):
                sub.offer(published.id, prev, published.frame)
        self.released = published.id

    def _apply_fill(self, horizon: int, found: list[Published]) -> None:
        if horizon <= self.released:
            return
        batch = {p.id: p for p in found if p.id > self.released}
        for event_id in [i for i in self._waiting if i <= horizon]:
            # Prefer the doorbell's frame: it is byte for byte what live streams send.
            batch[event_id] = self._waiting.pop(event_id)
        for event_id in sorted(batch):
            self._release(batch[event_id])
        # Ids up to the horizon that no row has were rolled back: never to exist.
        self.released = horizon
        self._drain()

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        # A process serves one event loop (daphne's); tests may start a fresh one.
        for task in self._background:
            try:
                task.cancel()
            except RuntimeError:  # its loop is already closed
                pass
        self.loop = loop
        self.groups = {}
        self.count = 0
        self._waiting = {}
        self._last = {}
        self._kick = asyncio.Event()
        self._ready = loop.create_future()
        self._background = [loop.create_task(self._start())]
        if getattr(settings, "REDIS_URL", ""):
            self._background.append(loop.create_task(self._listen()))

    async def _start(self) -> None:
        assert self._ready is not None
        while True:
            try:
                horizon = await sync_to_async(_horizon, thread_sensitive=False)()
                break
            except Exception:  # the database being briefly away must not kill the hub
                log.exception("reading the event log's horizon failed; retrying")
                await asyncio.sleep(1)
        self.released = self._floor = max(self.released, horizon)
        self._waiting = {i: p for i, p in self._waiting.items() if i > horizon}
        self._ready.set_result(None)
        self._drain()
        await self._fill_loop()

    async def _fill_loop(self) -> None:
        assert self._kick is not None
        read = sync_to_async(_read_final_after, thread_sensitive=False)
        poll = settings.CROWS_STREAM_POLL_S
        clock = asyncio.get_running_loop().time
        # Reads start on a beat, not a pause after the last read ends, and a little more
        # often than the poll interval: an event only the database brings (Redis down, or
        # a db_worker's without Redis) reaches the streams within CROWS_STREAM_POLL_S of its
        # commit, the read's own time included.
        beat = poll * POLL_BEAT
        next_read = clock() + beat
        gap_wait = GAP_WAIT_S
        while True:
            try:
                await asyncio.wait_for(self._kick.wait(), timeout=max(0.0, next_read - clock()))
                # A gap: give a doorbell that is merely late a moment to arrive.
                await asyncio.sleep(gap_wait)
                if not self._waiting:
                    self._kick.clear()
                    gap_wait = GAP_WAIT_S
                    continue
            except TimeoutError:
                if not self.count and not self._waiting:
                    next_read = clock() + beat  # no stream open: nobody to read for
                    continue
            self._kick.clear()
            next_read = clock() + beat
            try:
                horizon, found = await read(self.released)
            except Exception:
                log.exception("stream catch-up read failed")
                await asyncio.sleep(min(poll, 1.0))
                continue
            self._apply_fill(horizon, found)
            # A read that took longer than the beat is not followed by another at once:
            # a slow database is not read back to back.
            next_read = max(next_read, clock() + poll * (1 - POLL_BEAT))
            # A gap the database cannot close yet (its transaction is still open): look
            # again, less and less often, up to the poll interval.
            gap_wait = min(gap_wait * 2, poll) if self._waiting else GAP_WAIT_S

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
                            keys=tuple(message["keys"]),
                        )
                    )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("channel layer listener failed; retrying in 1 s", exc_info=True)
                await asyncio.sleep(1)

    # -- the publishing side (any thread) ------------------------------------------

    def publish(self, published: Published) -> None:
        """Ring the doorbell for a committed event. Never raises: the row is already safe."""
        try:
            if self.loop is not None and not self.loop.is_closed():
                self.loop.call_soon_threadsafe(self.deliver, published)
        except Exception:
            log.exception("delivering event %s in-process failed", published.id)
        if getattr(settings, "REDIS_URL", ""):
            try:
                self._publish_to_layer(published)
            except Exception as exc:
                if not redis_unreachable(exc):
                    log.exception("publishing event %s failed; other servers catch up by poll", published.id)
                elif PUBLISH_FAILURES.now():
                    log.warning("publishing event %s to Redis failed (%s: %s); other servers catch up by "
                                "poll (said once a minute)", published.id, type(exc).__name__, exc)

    def _publish_to_layer(self, published: Published) -> None:
        layer = get_channel_layer()
        assert layer is not None
        message = {
            "type": "crows.event",
            "id": published.id,
            "name": published.name,
            "frame": published.frame,
            "keys": list(published.keys),
        }
        future = asyncio.run_coroutine_threadsafe(
            layer.group_send(_group_name(), message), self._publisher()
        )
        future.add_done_callback(_log_send_failure)

    def _publisher(self) -> asyncio.AbstractEventLoop:
        # One long-lived loop per process sends to the layer, so a publish from a worker
        # thread neither blocks on the network nor opens a connection per event.
        with self._publisher_lock:
            if self._publisher_loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="crows-publisher", daemon=True).start()
                self._publisher_loop = loop
            return self._publisher_loop


def _log_send_failure(future: Any) -> None:
    if future.cancelled() or (exc := future.exception()) is None:
        return
    if not redis_unreachable(exc):
        # Not an outage (a message the layer refused, say): a bug, said every time.
        log.error("Redis publish failed; other servers catch up from the database", exc_info=exc)
    elif PUBLISH_FAILURES.now():
        log.warning("Redis publish failed (%s); other servers catch up from the database (said once a minute)", exc)


hub = Hub()
publish = hub.publish
