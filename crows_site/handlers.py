"""Django's ASGI handler, with each request's sync work on a thread kept from earlier
requests.

Stock Django enters `ThreadSensitiveContext()` per request, and asgiref gives every such
context a new one-thread executor: a thread is started for the request, another one is
started at its end to join the first, and the request's database connection (Django keeps
them per thread) is opened, set up and dropped with it. Measured under daphne
(docs/PERFORMANCE.md): every nest POST opened a new SQLite connection and ran its PRAGMAs.

asgiref lets the caller own the executor (`ThreadSensitiveContext(executor=...)`), so a
request here borrows an idle one-thread executor and gives it back when its response is
sent. Everything Django runs for one request still runs on one thread, as the
thread-sensitive contract asks; what changes is that the thread, and its connection,
outlive the request. A request that ends normally has awaited every sync call it made,
so its thread is idle and goes straight back. One that is cancelled (daphne cancels an
application some seconds after its client hung up, and at shutdown) may leave a sync
call running: its thread goes back only once that call has finished, so no later
request waits behind it. Either way one worker thread per executor means two requests
never use a connection at once.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase

# Idle threads kept for the next requests. Beyond this many at once, a burst's extra
# threads end with their requests, as stock Django's all do.
KEPT_IDLE_THREADS = 32


class RequestThreads:
    """A free list of one-thread executors for requests."""

    def __init__(self, keep: int = KEPT_IDLE_THREADS) -> None:
        self.keep = keep
        self._idle: list[ThreadPoolExecutor] = []
        self._lock = threading.Lock()
        self._made = 0

    def borrow(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            self._made += 1
            number = self._made
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"crows-request-{number}")

    def give_back_when_idle(self, executor: ThreadPoolExecutor) -> None:
        """Give the executor back once the work already queued on it has run."""
        executor.submit(_nothing).add_done_callback(lambda _done: self.give_back(executor))

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        """Give back an idle executor."""
        with self._lock:
            if len(self._idle) < self.keep:
                self._idle.append(executor)
                return
        # Not waiting: the thread may still be finishing a call (see the module docstring).
        executor.shutdown(wait=False)

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)


class KeptThreadsASGIHandler(ASGIHandler):
    """`ASGIHandler` whose requests run their sync parts on kept threads, and run the
    middleware chain and the view in one thread hop.

    Stock Django runs the chain async under ASGI: every `MiddlewareMixin` middleware
    (Django's own security, session, common, CSRF, auth, messages and clickjacking ones)
    then calls its `process_request` and `process_response` through `sync_to_async`, and
    the CSRF check and the sync view take one hop more each: 16 hand-overs between the
    event loop and the request's thread per request (counted), which py-spy found to be
    most of a refused POST's CPU (docs/PERFORMANCE.md). Every view here is sync, so the
    chain is loaded sync and called once on the request's thread; what runs, and on which
    thread, is what Django's WSGI handler does. (An async view would still work: Django's
    sync chain runs it through `async_to_sync`.)
    """

    def __init__(self, threads: RequestThreads | None = None) -> None:
        super().__init__()
        self.threads = threads or RequestThreads()

    def load_middleware(self, is_async: bool = False) -> None:
        # ASGIHandler asks for the async chain; the sync one is loaded instead (once).
        super().load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = await sync_to_async(self.get_response, thread_sensitive=True)(request)
        return response

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.borrow()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        except BaseException:
            # Cancelled, or failed: a sync call of this request may still be running.
            self.threads.give_back_when_idle(executor)
            raise
        self.threads.give_back(executor)


def _nothing() -> None:
    """Queued behind a request's leftover work, to learn when the thread is free."""


def get_asgi_application() -> KeptThreadsASGIHandler:
    """`django.core.asgi.get_asgi_application`, returning the kept-threads handler."""
    django.setup(set_prefix=False)
    return KeptThreadsASGIHandler()
