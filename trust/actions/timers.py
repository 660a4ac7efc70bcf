"""The trust app's two fail-safe timers: an approval's timeout and a decision's expiry.

The tasks (trust.tasks) run the actions that close approvals and decisions, and those
actions schedule the tasks: were the actions to import the tasks, the code would import
itself in a circle. TrustConfig.ready() hands the tasks' schedulers to `wire` instead,
once, at start-up (as the chat core's nests.actions.chat.queue does).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime


class _Hooks:
    approval: Callable[[str, str, int, datetime], object] | None = None
    decision: Callable[[str, datetime], object] | None = None


def wire(
    *, approval: Callable[[str, str, int, datetime], object], decision: Callable[[str, datetime], object]
) -> None:
    _Hooks.approval, _Hooks.decision = approval, decision


def schedule_approval_timeout(item_id: str, target: str, attempt: int, *, at: datetime) -> None:
    """Queue the approval's timeout to run at `at`, in the caller's transaction."""
    if _Hooks.approval is None:
        raise RuntimeError("the trust timers are not wired (TrustConfig.ready wires them)")
    _Hooks.approval(item_id, target, attempt, at)


def schedule_decision_expiry(decision_id: str, *, at: datetime) -> None:
    """Queue the decision's expiry to run at `at`, in the caller's transaction."""
    if _Hooks.decision is None:
        raise RuntimeError("the trust timers are not wired (TrustConfig.ready wires them)")
    _Hooks.decision(decision_id, at)
