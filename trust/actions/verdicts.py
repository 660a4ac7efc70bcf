"""Approvals and verdicts: every target of every item gets exactly one `verdict`.

A target that needs the owner is opened as an Approval with a deadline, and a timeout
task is scheduled for that deadline in the same transaction, so it fires even if the
server restarts in between. The owner's answer, or the timeout, whichever locks the
Approval first, records the one Verdict; the other finds it decided (a 404 for a second
answer, a no-op for a late timeout).

Trust must not import nests, so the pipeline hears of owner and timeout verdicts through
`on_verdict` hooks, called inside the verdict's transaction: the item resumes (or is
skipped) atomically with its verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from flock.errors import BadInput, NotFound
from flock.events import emit, register_event_names
from trust.actions.ledger import record_trust_outcome
from trust.actions.locking import lock_event_log
from trust.models import Approval, Target, Verdict

register_event_names("verdict")

TARGETS = tuple(Target.values)

# Called inside the verdict's transaction with the new Verdict (owner or timeout, never
# auto: the pipeline records auto verdicts itself and carries on inline).
_verdict_hooks: list[Callable[[Verdict], None]] = []


def on_verdict(hook: Callable[[Verdict], None]) -> Callable[[Verdict], None]:
    if hook not in _verdict_hooks:
        _verdict_hooks.append(hook)
    return hook


def _emit_verdict(verdict: Verdict, *, by: str = "") -> None:
    payload = {"item_id": verdict.item_id, "target": verdict.target, "verdict": verdict.verdict}
    if by:
        payload["by"] = by  # who answered, when it was not the API (docs/OPERATING.md)
    emit("verdict", payload, list_id=verdict.list_id, nest_id=verdict.nest_id)


def open_approval(
    item_id: str, *, target: str, list_id: str = "", task_type: str, holders: list[str], nest_id: str = ""
) -> Approval:
    """Wait for the owner's verdict on `target` of `item_id`, until CROWS_APPROVAL_TIMEOUT_S.

    Call it inside the transaction that announced the target (item.triaged or
    item.answered with needs_approval, or a chat delivery's nest.message), so the
    announcement, the approval and its timeout commit together. A chat delivery's
    approval has its msg_id as `item_id`, no `list_id` and its room as `nest_id`."""
    from trust.tasks import time_out_approval_task

    with transaction.atomic():
        deadline = timezone.now() + timedelta(seconds=settings.CROWS_APPROVAL_TIMEOUT_S)
        approval = Approval.objects.create(
            item_id=item_id,
            target=target,
            list_id=list_id,
            nest_id=nest_id,
            task_type=task_type,
            holders=list(holders),
            deadline=deadline,
        )
        time_out_approval_task.using(run_after=deadline).enqueue(item_id, target)
    return approval


def record_auto_verdict(item_id: str, *, target: str, list_id: str = "", nest_id: str = "") -> Verdict:
    """Trust skipped approval: the target still gets its one verdict, `auto`. Trust does
    not move. No hook runs: the pipeline records this itself and carries on."""
    with transaction.atomic():
        lock_event_log()
        verdict = Verdict.objects.create(
            item_id=item_id, target=target, list_id=list_id, nest_id=nest_id, verdict=Verdict.Value.AUTO
        )
        _emit_verdict(verdict)
    return verdict


def _check_body(item_id: Any, target: Any, approve: Any) -> tuple[str, str, bool]:
    if item_id is None:
        raise BadInput("item_id is required")
    if not isinstance(item_id, str) or not item_id.strip():
        raise BadInput("item_id must be a non-empty string")
    if target is None:
        raise BadInput(f"target is required: {' or '.join(TARGETS)}")
    if target not in TARGETS:
        raise BadInput(f"target must be {' or '.join(TARGETS)}, got {str(target)[:40]!r}")
    # A missing approve is never read as a no (DECISIONS.md), and neither is 0 or "false".
    if approve is None:
        raise BadInput("approve is required: true or false")
    if not isinstance(approve, bool):
        raise BadInput(f"approve must be true or false, got {type(approve).__name__}")
    return item_id.strip(), target, approve


def _decide(approval: Approval, value: str, *, by: str = "") -> Verdict | None:
    """Record `value` for a locked approval; None when it was already decided."""
    if Verdict.objects.filter(item_id=approval.item_id, target=approval.target).exists():
        return None
    try:
        # The savepoint keeps the caller's transaction usable if the constraint fires.
        with transaction.atomic():
            verdict = Verdict.objects.create(
                item_id=approval.item_id,
                target=approval.target,
                list_id=approval.list_id,
                nest_id=approval.nest_id,
                verdict=value,
                approval=approval,
            )
    except IntegrityError:
        return None
    _emit_verdict(verdict, by=by)
    return verdict


def record_owner_verdict(item_id: Any, *, target: Any, approve: Any, by: str = "") -> Verdict:
    """The owner's answer to a waiting approval; moves the holders' trust.

    Raises BadInput for a bad body and NotFound when nothing waits for this target
    (never asked, already answered, timed out, or lost a race to another answer)."""
    item_id, target, approve = _check_body(item_id, target, approve)
    with transaction.atomic():
        lock_event_log()
        approval = Approval.objects.select_for_update().filter(item_id=item_id, target=target).first()
        value = Verdict.Value.APPROVED if approve else Verdict.Value.REJECTED
        verdict = _decide(approval, value, by=by) if approval else None
        if verdict is None:
            raise NotFound(f"nothing is waiting for a {target} verdict on {item_id!r}")
        for holder in approval.holders:
            record_trust_outcome(
                holder,
                task_type=approval.task_type,
                approved=approve,
                list_id=approval.list_id,
                item_id=item_id,
                nest_id=approval.nest_id,
            )
        for hook in _verdict_hooks:
            hook(verdict)
    return verdict


def time_out_approval(item_id: str, *, target: str) -> Verdict | None:
    """Fail safe: a target still waiting at its deadline gets `timeout`, which counts as a
    rejection for the item but never moves trust. Idempotent; None when nothing was due."""
    with transaction.atomic():
        lock_event_log()
        approval = Approval.objects.select_for_update().filter(item_id=item_id, target=target).first()
        if approval is None or Verdict.objects.filter(approval=approval).exists():
            return None
        if approval.deadline > timezone.now():
            # Too early (a clock step, a hand-run task): try again at the deadline.
            from trust.tasks import time_out_approval_task

            time_out_approval_task.using(run_after=approval.deadline).enqueue(item_id, target)
            return None
        verdict = _decide(approval, Verdict.Value.TIMEOUT)
        if verdict is None:
            return None
        for hook in _verdict_hooks:
            hook(verdict)
    return verdict


def reschedule_timeouts() -> int:
    """Start-up recovery: schedule a timeout for every approval still waiting. The task
    queue already holds one for each; this covers one lost to a failure. A duplicate is
    harmless, since a decided approval ignores its timeout."""
    from trust.tasks import time_out_approval_task

    waiting = Approval.objects.filter(verdict__isnull=True).values_list("item_id", "target", "deadline")
    count = 0
    with transaction.atomic():
        for item_id, target, deadline in waiting:
            time_out_approval_task.using(run_after=deadline).enqueue(item_id, target)
            count += 1
    return count
