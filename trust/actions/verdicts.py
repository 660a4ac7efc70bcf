"""Approvals and verdicts: every target of every item gets exactly one `verdict`.

A target that needs the owner is opened as an Approval with a deadline, and a timeout
task is scheduled for that deadline in the same transaction, so it fires even if the
server restarts in between. The owner's answer, or the timeout, whichever inserts first,
records the one Verdict (a verdict is unique per item, target and attempt); the other
finds it decided (a 404 for a second answer, a no-op for a late timeout).

Trust must not import nests, so the pipeline hears of owner and timeout verdicts through
`on_verdict` hooks, called inside the verdict's transaction: the item resumes (or is
skipped) atomically with its verdict. An overrule is told to `on_overrule` hooks the same
way (a chat delivery's room says it no longer stands).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from flock.db import action_atomic, insert_unless_present, mark_saved
from flock.errors import BadInput, Conflict, NotFound
from flock.events import batched, emit, rfc3339
from flock.schemas import ID_MAX
from trust.actions.ledger import record_trust_outcome
from trust.actions.locking import lock_event_log
from trust.actions.timers import schedule_approval_timeout
from trust.models import TRUSTED, Approval, Target, TrustEntry, Verdict
from trust.payloads import VerdictOverruled, VerdictPayload

TARGETS = tuple(Target.values)

# Called inside the verdict's transaction with the new Verdict (owner or timeout, never
# auto: the pipeline records auto verdicts itself and carries on inline). What a hook
# returns is ignored.
_verdict_hooks: list[Callable[[Verdict], object]] = []


def on_verdict(hook: Callable[[Verdict], object]) -> Callable[[Verdict], object]:
    if hook not in _verdict_hooks:
        _verdict_hooks.append(hook)
    return hook


# Called inside an overrule's transaction, after its events, with the overruled Verdict.
_overrule_hooks: list[Callable[[Verdict], object]] = []


def on_overrule(hook: Callable[[Verdict], object]) -> Callable[[Verdict], object]:
    if hook not in _overrule_hooks:
        _overrule_hooks.append(hook)
    return hook


REASON_MAX_CHARS = 2000
EDITED_TEXT_MAX_CHARS = 20000


def _emit_verdict(verdict: Verdict, *, by: str = "") -> None:
    payload = VerdictPayload(item_id=verdict.item_id, target=verdict.target, verdict=verdict.verdict)
    if by:
        payload["by"] = by  # who answered, when it was not the API (docs/OPERATING.md)
    # Extensions (docs/REVIEW.md), present only when they say something.
    if verdict.reason:
        payload["reason"] = verdict.reason
    if verdict.edited_text:
        payload["edited"] = True
    if verdict.attempt > 1:
        payload["attempt"] = verdict.attempt
    emit("verdict", payload, list_id=verdict.list_id, nest_id=verdict.nest_id)


def open_approval(
    item_id: str,
    *,
    target: str,
    list_id: str = "",
    task_type: str,
    holders: list[str],
    nest_id: str = "",
    attempt: int = 1,
) -> Approval:
    """Wait for the owner's verdict on `target` of `item_id`, until CROWS_APPROVAL_TIMEOUT_S.

    Call it inside the transaction that announced the target (item.triaged or
    item.answered with needs_approval, or a chat delivery's nest.message), so the
    announcement, the approval and its timeout commit together. A chat delivery's
    approval has its msg_id as `item_id`, no `list_id` and its room as `nest_id`.
    `attempt` counts a retried item's flights (docs/REVIEW.md)."""
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
            attempt=attempt,
        )
        schedule_approval_timeout(item_id, target, attempt, at=deadline)
    return approval


def record_auto_verdict(
    item_id: str,
    *,
    target: str,
    list_id: str = "",
    nest_id: str = "",
    attempt: int = 1,
    task_type: str = "",
    holders: list[str] | tuple[str, ...] = (),
) -> Verdict:
    """Trust skipped approval: the target still gets its one verdict, `auto`. Trust does
    not move. No hook runs: the pipeline records this itself and carries on. The holders
    and task type are kept so the owner can overrule it later (`overrule_verdict`)."""
    with action_atomic():
        lock_event_log()
        verdict = Verdict.objects.create(
            item_id=item_id, target=target, list_id=list_id, nest_id=nest_id, verdict=Verdict.Value.AUTO,
            attempt=attempt, task_type=task_type, holders=list(holders),
        )
        _emit_verdict(verdict)
    return verdict


def auto_verdict_if_trusted(
    item_id: str,
    *,
    target: str,
    list_id: str = "",
    nest_id: str = "",
    attempt: int = 1,
    task_type: str,
    holders: list[str] | tuple[str, ...],
) -> Verdict | None:
    """record_auto_verdict's row when every holder is trusted for `task_type`
    (trust.queries.all_trusted), else None: the target then needs the owner. One
    `INSERT … SELECT … WHERE` with each holder's newest level in its condition, instead of
    a read of the levels and then the insert.

    The caller emits the verdict with emit_auto_verdict, after what announced its target
    (item.triaged, item.answered: their `needs_approval` is this one's None). The levels
    are read without a lock, as all_trusted reads them: a verdict moving trust meanwhile
    takes effect from the next target on, either way."""
    names = list(dict.fromkeys(holders))
    if not names:
        return None  # nothing to vouch for (all_trusted)
    q = connection.ops.quote_name
    entries = q(TrustEntry._meta.db_table)
    newest = (f"(SELECT e.{q('level')} FROM {entries} e WHERE e.{q('holder')} = %s AND e.{q('task_type')} = %s"
              f" ORDER BY e.{q('seq')} DESC LIMIT 1) = %s")
    condition = " AND ".join([newest] * len(names))
    now = timezone.now()
    holders_field = Verdict._meta.get_field("holders")
    columns = ("item_id", "target", "list_id", "nest_id", "verdict", "decided_at", "attempt", "reason", "edited_text",
               "task_type", "holders")
    sql = (f"INSERT INTO {q(Verdict._meta.db_table)} ({', '.join(q(c) for c in columns)})"
           f" SELECT {', '.join(['%s'] * len(columns))} WHERE {condition} RETURNING {q('id')}")
    params: list[Any] = [item_id, target, list_id, nest_id, Verdict.Value.AUTO,
                         connection.ops.adapt_datetimefield_value(now), attempt, "", "", task_type,
                         holders_field.get_db_prep_save(names, connection)]
    for name in names:
        params += [name, task_type, TRUSTED]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    verdict = Verdict(
        pk=row[0], item_id=item_id, target=target, list_id=list_id, nest_id=nest_id, verdict=Verdict.Value.AUTO,
        decided_at=now, attempt=attempt, task_type=task_type, holders=names,
    )
    return mark_saved(verdict)


def emit_auto_verdict(verdict: Verdict) -> None:
    """Announce an auto verdict auto_verdict_if_trusted recorded (record_auto_verdict
    emits its own)."""
    _emit_verdict(verdict)


def check_item_id(item_id: Any) -> str:
    """An item's id (or a chat delivery's msg_id), trimmed; ids are at most 80 characters,
    and a longer one is refused before it is looked up (and echoed in a 404)."""
    if item_id is None:
        raise BadInput("item_id is required")
    if not isinstance(item_id, str) or not item_id.strip():
        raise BadInput("item_id must be a non-empty string")
    item_id = item_id.strip()
    if len(item_id) > ID_MAX:
        raise BadInput(f"item_id must be at most {ID_MAX} characters")
    return item_id


def _check_body(item_id: Any, target: Any, approve: Any) -> tuple[str, str, bool]:
    item_id = check_item_id(item_id)
    if target is None:
        raise BadInput(f"target is required: {' or '.join(TARGETS)}")
    if target not in TARGETS:
        raise BadInput(f"target must be {' or '.join(TARGETS)}, got {str(target)[:40]!r}")
    # A missing approve is never read as a no (docs/LISTS.md), and neither is 0 or "false".
    if approve is None:
        raise BadInput("approve is required: true or false")
    if not isinstance(approve, bool):
        raise BadInput(f"approve must be true or false, got {type(approve).__name__}")
    return item_id, target, approve


def check_reason(reason: Any) -> str:
    """The owner's optional reason: a string of at most REASON_MAX_CHARS, whitespace trimmed."""
    if reason is None:
        return ""
    if not isinstance(reason, str):
        raise BadInput(f"reason must be a string, got {type(reason).__name__}")
    reason = reason.strip()
    if len(reason) > REASON_MAX_CHARS:
        raise BadInput(f"reason is {len(reason):,} characters long; at most {REASON_MAX_CHARS:,}")
    return reason


def check_edited_text(edited_text: Any, *, target: str, approve: bool) -> str:
    if edited_text is None:
        return ""
    if not isinstance(edited_text, str):
        raise BadInput(f"edited_text must be a string, got {type(edited_text).__name__}")
    if target != Target.OUTPUT:
        raise BadInput("edited_text corrects an answer: it goes with target output")
    if not approve:
        raise BadInput("edited_text is approved text: send it with approve true")
    if not edited_text.strip():
        raise BadInput("edited_text is empty: send the corrected answer, or approve without it")
    if len(edited_text) > EDITED_TEXT_MAX_CHARS:
        raise BadInput(f"edited_text is {len(edited_text):,} characters long; at most {EDITED_TEXT_MAX_CHARS:,}")
    return edited_text


def _waiting_approval(item_id: str, target: str, attempt: int | None = None) -> Approval | None:
    """Lock the approval of the item's newest attempt (or of `attempt`) for `target`."""
    rows = Approval.objects.select_for_update().filter(item_id=item_id, target=target)
    if attempt is not None:
        rows = rows.filter(attempt=attempt)
    return rows.order_by("-attempt").first()


def _decide(
    approval: Approval, value: str, *, by: str = "", reason: str = "", edited_text: str = ""
) -> Verdict | None:
    """Record `value` for a locked approval; None when it was already decided.

    One statement: every decider locks the approval first, so a second one finds the
    verdict there; the insert skips it on the once-per-attempt constraint all the same
    (no savepoint, no read before it)."""
    verdict = Verdict(
        item_id=approval.item_id,
        target=approval.target,
        list_id=approval.list_id,
        nest_id=approval.nest_id,
        verdict=value,
        approval=approval,
        attempt=approval.attempt,
        reason=reason,
        edited_text=edited_text,
        task_type=approval.task_type,
        holders=list(approval.holders),
    )
    if not insert_unless_present(verdict):
        return None
    _emit_verdict(verdict, by=by)
    return verdict


_VERDICT_COLUMNS = ("item_id", "target", "list_id", "nest_id", "verdict", "approval_id", "decided_at", "attempt",
                    "reason", "edited_text", "task_type", "holders")


def _decide_in_time(item_id: str, target: str, value: str, *, by: str, reason: str, edited_text: str) -> Verdict | None:
    """Record `value` for the newest attempt's approval of `target`, if it is undecided
    and before its deadline: one `INSERT … SELECT … ON CONFLICT DO NOTHING RETURNING`,
    the verdict copied from its approval. None when nothing was inserted (no approval,
    decided already, or late): the caller then looks at the approval to say which.

    The approval's row is not locked: the once-per-attempt constraint is what makes the
    verdict happen once, whoever inserts first (the owner, a second answer, the timeout),
    and a second insert waits for the first's commit on that constraint's index."""
    now = timezone.now()
    verdict_table = connection.ops.quote_name(Verdict._meta.db_table)
    approval_table = connection.ops.quote_name(Approval._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in _VERDICT_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {verdict_table} ({columns})"
            " SELECT a.item_id, a.target, a.list_id, a.nest_id, %s, a.id, %s, a.attempt, %s, %s, a.task_type, a.holders"
            f" FROM {approval_table} a WHERE a.id = (SELECT newest.id FROM {approval_table} newest"
            " WHERE newest.item_id = %s AND newest.target = %s ORDER BY newest.attempt DESC LIMIT 1)"
            " AND a.deadline > %s"
            " ON CONFLICT DO NOTHING RETURNING id, list_id, nest_id, approval_id, attempt, task_type, holders",
            [value, connection.ops.adapt_datetimefield_value(now), reason, edited_text,
             item_id, target, connection.ops.adapt_datetimefield_value(now)],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    pk, list_id, nest_id, approval_id, attempt, task_type, holders = row
    verdict = Verdict(
        pk=pk, item_id=item_id, target=target, list_id=list_id, nest_id=nest_id, verdict=value,
        approval_id=approval_id, decided_at=now, attempt=attempt, reason=reason, edited_text=edited_text,
        task_type=task_type, holders=json.loads(holders) if isinstance(holders, str) else list(holders),
    )
    mark_saved(verdict)
    _emit_verdict(verdict, by=by)
    return verdict


def record_owner_verdict(
    item_id: Any,
    *,
    target: Any,
    approve: Any,
    by: str = "",
    reason: Any = None,
    edited_text: Any = None,
) -> Verdict:
    """The owner's answer to a waiting approval; moves the holders' trust.

    `reason` (optional) is kept with the verdict. `edited_text` approves the owner's
    correction of the answer instead of the crow's text: the item counts as answered, and
    trust does not move either way, since the owner neither accepted nor refused the
    crow's work as it was (docs/REVIEW.md).

    Raises BadInput for a bad body and NotFound when nothing waits for this target
    (never asked, already answered, timed out, or lost a race to another answer). An
    answer after the deadline records the timeout first, then gets the NotFound: a caller
    inside its own transaction must catch it there, or that timeout rolls back with it
    (the API and the admin call this outside any)."""
    item_id, target, approve = _check_body(item_id, target, approve)
    reason = check_reason(reason)
    edited = check_edited_text(edited_text, target=target, approve=approve)
    article = "an" if target[:1] in "aeiou" else "a"
    value = Verdict.Value.APPROVED if approve else Verdict.Value.REJECTED
    with transaction.atomic(), batched():
        lock_event_log()
        verdict = _decide_in_time(item_id, target, value, by=by, reason=reason, edited_text=edited)
        # Nothing recorded: no approval, answered already, or late (then the timeout is
        # recorded now; see below).
        approval = _waiting_approval(item_id, target) if verdict is None else None
        late = approval is not None and _past_its_deadline(approval)
        if late:
            # Fail safe: an answer after the deadline is too late even when the timeout
            # task has not run yet (a busy worker): the timeout is recorded now, in this
            # transaction, and the answer refused once it commits.
            assert approval is not None
            time_out_approval(item_id, target=target, attempt=approval.attempt)
        else:
            if verdict is None:
                raise NotFound(f"nothing is waiting for {article} {target} verdict on {item_id!r}")
            if not edited:
                for holder in verdict.holders:
                    record_trust_outcome(
                        holder,
                        task_type=verdict.task_type,
                        approved=approve,
                        list_id=verdict.list_id,
                        item_id=item_id,
                        nest_id=verdict.nest_id,
                    )
            for hook in _verdict_hooks:
                hook(verdict)
    if late:
        assert approval is not None
        raise NotFound(
            f"nothing is waiting for {article} {target} verdict on {item_id!r}: it timed out at "
            f"{rfc3339(approval.deadline)}, which counts as rejected"
        )
    assert verdict is not None
    return verdict


def _decided(approval: Approval) -> bool:
    return Verdict.objects.filter(item_id=approval.item_id, target=approval.target, attempt=approval.attempt).exists()


def _past_its_deadline(approval: Approval) -> bool:
    """Still undecided and its deadline has passed: only the timeout may decide it now."""
    return approval.deadline <= timezone.now() and not _decided(approval)


def overrule_verdict(item_id: Any, *, target: Any = Target.OUTPUT, reason: Any = None, by: str = "owner") -> Verdict:
    """The owner rejects an answer trust had let through (`auto`) after the fact.

    The verdict is marked overruled (it stays `auto` in the record of what happened then)
    and every holder it judged is demoted exactly as an owner rejection demotes, which
    emits `trust.changed` where a level falls; `verdict.overruled` tells the pages.
    NotFound when the target has no verdict; Conflict when it was not `auto` or is
    already overruled."""
    item_id = check_item_id(item_id)
    if target != Target.OUTPUT:
        raise BadInput("only an answer (target output) can be overruled")
    reason = check_reason(reason)
    with transaction.atomic():
        lock_event_log()
        verdict = (
            Verdict.objects.select_for_update().filter(item_id=item_id, target=target).order_by("-attempt").first()
        )
        if verdict is None:
            raise NotFound(f"no {target} verdict on {item_id!r} to overrule")
        if verdict.verdict != Verdict.Value.AUTO:
            raise Conflict(
                f"only an auto-approved answer can be overruled; {item_id!r} was {verdict.verdict} "
                "(answer it while it waits instead)"
            )
        if verdict.overruled_at is not None:
            raise Conflict(f"the answer to {item_id!r} is already overruled")
        verdict.overruled_at = timezone.now()
        verdict.reason = reason
        verdict.save(update_fields=["overruled_at", "reason"])
        payload = VerdictOverruled(item_id=item_id, target=verdict.target, holders=list(verdict.holders), by=by)
        if reason:
            payload["reason"] = reason
        if verdict.attempt > 1:
            payload["attempt"] = verdict.attempt
        # The overrule first, then the demotions it causes (docs/REVIEW.md), as a verdict
        # comes before the trust.changed it causes.
        emit("verdict.overruled", payload, list_id=verdict.list_id, nest_id=verdict.nest_id)
        if verdict.task_type:
            for holder in verdict.holders:
                record_trust_outcome(
                    holder, task_type=verdict.task_type, approved=False, list_id=verdict.list_id,
                    item_id=item_id, nest_id=verdict.nest_id,
                )
        for hook in _overrule_hooks:
            hook(verdict)
    return verdict


def time_out_approval(item_id: str, *, target: str, attempt: int | None = None) -> Verdict | None:
    """Fail safe: a target still waiting at its deadline gets `timeout`, which counts as a
    rejection for the item but never moves trust. Idempotent; None when nothing was due."""
    with transaction.atomic():
        lock_event_log()
        approval = _waiting_approval(item_id, target, attempt)
        if approval is None or Verdict.objects.filter(approval=approval).exists():
            return None
        if approval.deadline > timezone.now():
            # Too early (a clock step, a hand-run task): try again at the deadline.
            schedule_approval_timeout(item_id, target, approval.attempt, at=approval.deadline)
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
    waiting = Approval.objects.filter(verdict__isnull=True).values_list("item_id", "target", "deadline", "attempt")
    count = 0
    with transaction.atomic():
        for item_id, target, deadline, attempt in waiting:
            schedule_approval_timeout(item_id, target, attempt, at=deadline)
            count += 1
    return count
