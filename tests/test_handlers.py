"""The ASGI handler keeps request threads (crows_site/handlers.py): a request's sync work
runs on one thread, and the next request reuses it, with its database connection."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.core import signals

from crows_site.handlers import KeptThreadsASGIHandler, RequestThreads
from tests.support.asgi import http_scope

SCOPE = http_scope("/api/no-such-thing")

# The gate's first request in a process builds the API document, which reads the roster.
pytestmark = pytest.mark.django_db


@pytest.fixture
def request_threads() -> Iterator[list[tuple[str, str]]]:
    """(signal, thread name) for every request_started/finished, in order."""
    seen: list[tuple[str, str]] = []

    def started(**kwargs: Any) -> None:
        seen.append(("started", threading.current_thread().name))

    def finished(**kwargs: Any) -> None:
        seen.append(("finished", threading.current_thread().name))

    signals.request_started.connect(started, weak=False)
    signals.request_finished.connect(finished, weak=False)
    yield seen
    signals.request_started.disconnect(started)
    signals.request_finished.disconnect(finished)


async def get(handler: KeptThreadsASGIHandler) -> int:
    app = ApplicationCommunicator(handler, dict(SCOPE))
    await app.send_input({"type": "http.request", "body": b""})
    start = await app.receive_output(5)
    await app.receive_output(5)  # the body
    await app.wait(5)
    return int(start["status"])


def test_requests_one_after_another_run_on_the_same_kept_thread(
    request_threads: list[tuple[str, str]],
) -> None:
    handler = KeptThreadsASGIHandler(RequestThreads(keep=4))

    assert asyncio.run(get(handler)) == 404
    assert asyncio.run(get(handler)) == 404

    names = {name for _, name in request_threads}
    assert [signal for signal, _ in request_threads] == ["started", "finished"] * 2
    assert len(names) == 1 and names.pop().startswith("crows-request-")
    assert handler.threads.idle() == 1


def test_a_burst_keeps_only_so_many_idle_threads() -> None:
    threads = RequestThreads(keep=2)
    borrowed = [threads.borrow() for _ in range(3)]
    assert len({id(e) for e in borrowed}) == 3

    for executor in borrowed:
        threads.give_back(executor)

    assert threads.idle() == 2
    assert borrowed[2]._shutdown  # the one over the limit ends
    assert threads.borrow() is borrowed[1]


def test_a_thread_still_busy_goes_back_only_once_its_call_has_run() -> None:
    threads = RequestThreads(keep=1)
    executor = threads.borrow()
    release = threading.Event()
    first = executor.submit(release.wait, 5)

    threads.give_back_when_idle(executor)
    assert threads.idle() == 0
    release.set()
    first.result(5)
    assert _eventually(lambda: threads.idle() == 1)
    assert threads.borrow() is executor


def test_a_cancelled_request_gives_its_thread_back_only_once_its_sync_call_ends() -> None:
    # daphne cancels an application some seconds after its client hung up; the view's
    # sync call runs on regardless, and no later request may queue behind it.
    handler = KeptThreadsASGIHandler(RequestThreads(keep=4))
    started, release = threading.Event(), threading.Event()

    def slow_view() -> None:
        started.set()
        release.wait(5)

    async def handle(scope: Any, receive: Any, send: Any) -> None:
        await sync_to_async(slow_view)()

    handler.handle = handle  # type: ignore[method-assign]

    async def request_then_cancel() -> None:
        task = asyncio.ensure_future(handler(dict(SCOPE), None, None))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(request_then_cancel())
    assert handler.threads.idle() == 0
    release.set()
    assert _eventually(lambda: handler.threads.idle() == 1)


def _eventually(check: Any, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


class CountingThreads(RequestThreads):
    """RequestThreads whose executors count the calls handed to them."""

    def __init__(self) -> None:
        super().__init__(keep=4)
        self.calls: list[str] = []

    def borrow(self) -> Any:
        executor = super().borrow()
        submit = executor.submit

        def counted(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            self.calls.append(threading.current_thread().name)
            return submit(fn, *args, **kwargs)

        executor.submit = counted  # type: ignore[method-assign]
        return executor


def test_the_middleware_chain_and_the_view_take_one_thread_hop(
    request_threads: list[tuple[str, str]],
) -> None:
    # Stock Django under ASGI hands each of its MiddlewareMixin middlewares' hooks, the
    # CSRF check and the view to the request's thread one by one: about a dozen hops.
    # Here: request_started, the chain with the view, and the response's close.
    threads = CountingThreads()
    handler = KeptThreadsASGIHandler(threads)
    seen_by_view: list[str] = []
    original = handler._get_response

    def view_side(request: Any) -> Any:
        seen_by_view.append(threading.current_thread().name)
        return original(request)

    handler._get_response = view_side  # type: ignore[method-assign]
    handler.load_middleware(is_async=False)

    assert asyncio.run(get(handler)) == 404

    assert len(threads.calls) == 3
    names = {name for _, name in request_threads} | set(seen_by_view)
    assert len(names) == 1 and names.pop().startswith("crows-request-")
