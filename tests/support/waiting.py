"""Polling a live server from a test: the one wait loop the live and browser tests share."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until[T](check: Callable[[], T | None], *, what: str = "the condition", timeout: float = 60.0,
                  every: float = 0.2) -> T:
    """`check()`'s first truthy answer, asked every `every` seconds; AssertionError after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")
