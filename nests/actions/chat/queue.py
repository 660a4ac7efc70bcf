"""The chat core's two task hooks: queueing a crow's invocation and an expectation's check.

The tasks (nests.tasks_chat) run the chat core (an invocation posts its crow's reply, which
runs the reactors, which ask for invocations and open expectations): were the chat core to
import the tasks, the code would import itself in a circle. NestsConfig.ready() hands the
tasks' enqueuers to `wire` instead, once, at start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime


class _Hooks:
    invoke: Callable[[int], object] | None = None
    check: Callable[[int, datetime], object] | None = None


def wire(*, invoke: Callable[[int], object], check: Callable[[int, datetime], object]) -> None:
    _Hooks.invoke, _Hooks.check = invoke, check


def enqueue_invocation(invocation_id: int) -> None:
    """Queue the invocation's task in the caller's transaction: its row commits with the
    message that called for it, and the worker (woken on commit) cannot see one without
    the other."""
    if _Hooks.invoke is None:
        raise RuntimeError("the chat core's task hooks are not wired (NestsConfig.ready wires them)")
    _Hooks.invoke(invocation_id)


def schedule_check(expectation_pk: int, due_at: datetime) -> None:
    """Queue an expectation's check to run at `due_at`."""
    if _Hooks.check is None:
        raise RuntimeError("the chat core's task hooks are not wired (NestsConfig.ready wires them)")
    _Hooks.check(expectation_pk, due_at)
