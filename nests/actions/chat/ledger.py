"""The expectation ledger's records (docs/GOVERNANCE.md): opening and closing an
expectation, with its events, and keeping its check on the clock. The reactors that open
and close expectations (expectations, debates) and the timer all write through here, so
none of them calls another.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from flock.events import emit, lock_event_log, rfc3339
from flock.models import Crow
from flock.vocab import HARNESS, OWNER, MessageKind
from nests.actions.chat.effects import Say
from nests.actions.chat.queue import schedule_check
from nests.actions.chat.room import TEXT_MAX
from nests.models import ChatRequest, Expectation, Invocation, Nest, NestMessage
from nests.payloads import ExpectationClosed, ExpectationOpened
from nests.queries import crow_members
from nests.queries_ledger import NUDGE_LIMIT, expectation_record

SUMMARY_PREFIX = "Owner summary"


# Both on the firehose, with the room named in the payload: a room's own stream carries
# its messages (docs/API.md, the event stream), and every nudge or summary is one.


def schedule(exp: Expectation) -> None:
    """The expectation's check, queued for its due time (stale ones do nothing)."""
    schedule_check(exp.pk, exp.due_at)


def due_period() -> timedelta:
    return timedelta(seconds=settings.CROWS_EXPECTATION_DUE_S)


def open_expectation(
    message: NestMessage,
    *,
    crow: str,
    check: str,
    expected: str,
    request: ChatRequest | None = None,
    debate: Any = None,
    due_at: datetime | None = None,
    due_from: str = "default",
    jev: dict[str, Any] | None = None,
) -> Expectation:
    """Record an expectation, emit `expectation.opened` (on the firehose, naming the room) and schedule
    its check at `due_at` (default: now + CROWS_EXPECTATION_DUE_S). Call inside a transaction."""
    now = timezone.now()
    exp = Expectation.objects.create(
        expectation_id=f"new-{message.pk}-{crow}"[:24],
        nest=message.nest,
        message=message,
        request=request,
        debate=debate,
        crow=crow,
        check_name=check,
        expected=expected[:300],
        due_at=due_at or now + due_period(),
        due_from=due_from,
        confidence=1.0,
        jev=jev or {},
    )
    exp.expectation_id = f"exp-{exp.pk}"
    exp.save(update_fields=["expectation_id"])
    emit("expectation.opened", ExpectationOpened(**expectation_record(exp), nest_id=exp.nest.nest_id))
    schedule(exp)
    return exp


def close_expectation(exp: Expectation, *, status: str, by_msg_id: str = "", reason: str = "", confidence: float = 1.0) -> Expectation:
    """Close an open expectation (met / missed / escalated) and emit `expectation.closed`
    with the outcome. Call inside a transaction, with the row locked or fresh."""
    exp.status = status
    exp.scored = "met" if status == Expectation.Status.MET else "missed"
    exp.confidence = confidence
    exp.outcome_msg_id = by_msg_id or exp.outcome_msg_id
    exp.reason = reason[:300] or exp.reason
    exp.closed_at = timezone.now()
    exp.save()
    emit(
        "expectation.closed",
        ExpectationClosed(**expectation_record(exp), nest_id=exp.nest.nest_id, outcome=status),
    )
    return exp


def restart_timers(inv: Invocation) -> None:
    """A crow's invocation ended: its open expectations in the room that waited on it are
    checked again, one due period after a nudge it answered, or at their due time."""
    with transaction.atomic():
        lock_event_log()
        now = timezone.now()
        for exp in Expectation.objects.select_for_update().filter(
            nest_id=inv.nest_id, crow=inv.crow, status__in=Expectation.LIVE
        ):
            if (exp.nudge_msg_ids or [])[-1:] == [inv.trigger.msg_id]:
                exp.due_at = now + due_period()
                exp.save(update_fields=["due_at"])
                schedule(exp)
            elif exp.due_at <= now:
                schedule(exp)


def reschedule_expectation_checks() -> int:
    """Start-up recovery: a check for every open expectation at its due time (a duplicate
    is harmless: the check is idempotent and stale ones do nothing)."""
    count = 0
    with transaction.atomic():
        for exp in Expectation.objects.filter(status__in=Expectation.LIVE):
            schedule(exp)
            count += 1
    return count


# --- what the harness says about expectations ----------------------------------------------


def nudge_refusal(crow: str, nest: Nest) -> str:
    """Why a nudge to `crow` in `nest` cannot be delivered, or "" when it can: the crow is
    not active (quarantined, retired, gone), or no longer in the room. Such a nudge is
    never dropped: its expectation goes to the owner with this reason (docs/CHATROOM.md,
    "No addressed message dead-ends")."""
    found = Crow.objects.filter(name=crow).first()
    if found is None or found.status != Crow.Status.ACTIVE:
        state = found.status if found is not None else "gone"
        return f"{crow} is {state} and cannot be nudged"
    if crow not in crow_members(nest):
        # Taken out of the room (the admin): a nudge there could not be posted.
        return f"{crow} is no longer in {nest.nest_id} and cannot be nudged there"
    return ""


def nudge_line(loop_id: str, n: int, deadline: datetime, prompt: str, *, limit: int = NUDGE_LIMIT) -> str:
    """AGENT_PROTOCOL's nudge: `[NUDGE {id}] [nudge {n}/{max}] Deadline {deadline_utc}: {prompt}`,
    the deadline an ISO-8601 UTC time."""
    return f"[NUDGE {loop_id}] [nudge {n}/{limit}] Deadline {rfc3339(deadline)}: {prompt}"


def nudge_limit(exp: Expectation) -> int:
    return 1 if exp.check_name in Expectation.ONCE_CHECKS else NUDGE_LIMIT


def nudge_text(exp: Expectation, n: int, deadline: datetime, prompt: str = "") -> str:
    late = "is due" if exp.nudges == 0 and exp.due_from == "text" else "is overdue"
    return nudge_line(
        exp.message.msg_id, n, deadline,
        prompt or f"@{exp.crow}, {exp.expectation_id} {late}: {exp.expected}. Deliver it now, or decline with a reason; "
        "a reply with nothing new is not progress.",
        limit=nudge_limit(exp),
    )


def nudge(exp: Expectation, *, prompt: str = "") -> Say:
    """Nudge n/3: a harness message to the crow (dispatch invokes it, an exchange); once
    said, it is counted on the expectation and the clock restarts. `prompt` words it for
    a check that says more than "it is overdue" (docs/GOVERNANCE.md, 4-6)."""
    n = exp.nudges + 1
    # The nudge names its deadline: the next check, one due period from now.
    deadline = timezone.now() + due_period()

    def counted(said: NestMessage) -> None:
        exp.nudges = n
        exp.nudge_msg_ids = [*(exp.nudge_msg_ids or []), said.msg_id]
        exp.status = Expectation.Status.MISSED  # still owed: a deliver meets it, late
        exp.scored, exp.confidence = "missed", 1.0
        exp.due_at = deadline
        exp.save(update_fields=["nudges", "nudge_msg_ids", "status", "scored", "confidence", "due_at"])
        schedule(exp)

    return Say(
        author=HARNESS, text=nudge_text(exp, n, deadline, prompt), kind=MessageKind.NUDGE, to=exp.crow,
        refers_to=exp.message.msg_id, nest=exp.nest, then=counted,
    )


def _summary_line(exp: Expectation) -> str:
    return (
        f"- {exp.expectation_id} ({exp.check_name}) on {exp.message.msg_id}: {exp.expected}. "
        f"Due {rfc3339(exp.due_at)}, {exp.nudges}/{NUDGE_LIMIT} nudges."
    )


def summary(nest: Nest, exps: list[Expectation], *, why: str) -> Say:
    """One harness message to the owner listing the room's open expectations (those
    escalated now first); once said, the expectations it escalates close as `escalated`."""
    ids = {e.pk for e in exps}
    live = Expectation.objects.filter(nest=nest, status__in=Expectation.LIVE).exclude(pk__in=ids)
    # The other open ones that are due too; those not due yet are only counted, so two
    # summaries a moment apart do not repeat a list of promises nobody has missed.
    overdue = list(live.filter(due_at__lte=timezone.now()).order_by("due_at", "id"))
    pending = live.filter(due_at__gt=timezone.now()).count()
    head = f"{SUMMARY_PREFIX} for @{OWNER}: {why}. Open expectations in {nest.name}:"
    lines = [_summary_line(e) for e in exps + overdue]
    tail = [f"And {pending} more not due yet."] if pending else []
    text = _fit_summary(head, lines, tail, panel=f"/api/nests/{nest.nest_id}/expectations")

    def escalated(said: NestMessage) -> None:
        for exp in exps:
            exp.summary_msg_id = said.msg_id
            close_expectation(exp, status=Expectation.Status.ESCALATED, by_msg_id=said.msg_id, reason=why)

    return Say(
        author=HARNESS, text=text, to=OWNER, refers_to=exps[0].message.msg_id, nest=nest, then=escalated,
    )


def _fit_summary(head: str, lines: list[str], tail: list[str], *, panel: str, limit: int = TEXT_MAX) -> str:
    """The summary within a message's length: whole lines, and the count of those left
    out and where to read them, never a line cut off in the middle."""
    def more(left: int) -> list[str]:
        return [f"… and {left} more overdue: the room's expectations panel lists them ({panel})."] if left else []

    kept: list[str] = []
    for i, line in enumerate(lines):
        # This line fits if it leaves room to say how many are left after it (none after the last).
        if len("\n".join([head, *kept, line, *more(len(lines) - i - 1), *tail])) > limit:
            return "\n".join([head, *kept, *more(len(lines) - i), *tail])[:limit]
        kept.append(line)
    return "\n".join([head, *kept, *tail])[:limit]
