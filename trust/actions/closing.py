"""Closing an owner decision: the one way a decision ends, whoever ends it.

A decision closes when the owner answers it (trust.actions.decisions), when its deadline
passes, or when the crow it is about is reinstated or retired some other way
(trust.actions.quarantine withdraws it). The last is why this lives below both: the
answer reinstates or retires the crow, and reinstating or retiring closes decisions.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from flock.events import emit
from trust.actions.locking import lock_event_log
from trust.models import Decision
from trust.payloads import DecisionClosed

ANSWER_MAX = 300

_closed_hooks: list[Callable[[Decision], None]] = []


def on_decision_closed(hook: Callable[[Decision], None]) -> Callable[[Decision], None]:
    """Register `hook(decision)`, called inside the transaction that closed it."""
    if hook not in _closed_hooks:
        _closed_hooks.append(hook)
    return hook


def close_decision(decision: Decision, *, outcome: str, answer: str, by: str) -> Decision:
    """Close a locked open decision: emits `decision.closed` and runs the hooks, in the
    caller's transaction."""
    decision.status = Decision.Status.CLOSED
    decision.outcome = outcome
    decision.answer = answer[:ANSWER_MAX]
    decision.answered_by = by
    decision.closed_at = timezone.now()
    decision.save(update_fields=["status", "outcome", "answer", "answered_by", "closed_at"])
    emit(
        "decision.closed",
        DecisionClosed(
            decision_id=decision.decision_id, kind=decision.kind, subject=decision.subject, crow=decision.crow,
            status=decision.status, outcome=outcome, answer=decision.answer, by=by,
        ),
        nest_id=decision.nest_id,
    )
    for hook in _closed_hooks:
        hook(decision)
    return decision


def withdraw_decisions(crow: str, *, by: str, outcome: str, except_id: str = "") -> list[Decision]:
    """Close every open quarantine decision about `crow`, which was reinstated or retired
    some other way (the admin, Boss on the owner's order): nothing is left to decide.
    Emits `decision.closed` for each, with `outcome` and `by`."""
    closed = []
    with transaction.atomic():
        lock_event_log()
        for found in Decision.objects.select_for_update().filter(
            status=Decision.Status.OPEN, kind=Decision.Kind.QUARANTINE, crow=crow
        ).exclude(decision_id=except_id):
            closed.append(close_decision(found, outcome=outcome, answer="", by=by))
    return closed
