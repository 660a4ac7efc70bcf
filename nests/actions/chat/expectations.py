"""The expectation ledger and its nudges (docs/GOVERNANCE.md).

Opening: a message that creates an expectation is recorded inside post_message's
transaction, after dispatch has decided who answers:

- a request that invoked a crow to claim it: `requester_answer` (the crow must claim,
  deliver or decline with a reason);
- a claim that stood: `single_owner` (the claimer must deliver, or decline with a reason),
  or `promise_kept` when the claim names a time or Jev reads it as a promise;
- a crow's promise ("I'll have it in five minutes"): `promise_kept`. A promise about work
  the crow already owes moves that expectation's due time instead of opening a second one;
- debates open `rounds_completed` (the moderator) and `turn_order` (the crow whose turn it
  is) through `open_expectation`.

Jev's `expectation` question reads every owner and crow message (outside the
transaction); its answer is kept on the row, names the check when it is sure, and alone
opens a crow's promise when it is sure and the message names no time.

Scoring: every new message in the room scores the room's open expectations (met when the
responsible crow delivers, or claims for a request, or declines with a reason; pending
otherwise, with the confidence that it is still on time); the timer task
(`check_expectation_task`, scheduled at `due_at` in the transaction that sets it, and
re-scheduled at start-up) scores a due one as missed. A miss becomes a nudge
`[NUDGE <msg_id>] [nudge n/3] ...` from the harness to the crow, which invokes it and
spends one of the room's exchanges. After three nudges with no progress, or when the room
has no exchange left, the open expectations go to the owner in one summary message
instead, and after three the Sentry hears of the repeated miss. Misses never touch trust.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from flock import jev as jev_service
from flock.events import emit, lock_event_log, register_event_names
from flock.models import Crow
from flock.vocab import HARNESS, OWNER, SENTRY
from nests.actions.chat import budgets
from nests.actions.chat.due import due_from_text
from nests.models import ChatRequest, Claim, Expectation, Invocation, Nest, NestMessage
from nests.queries import crow_members

register_event_names("expectation.opened", "expectation.closed")

log = logging.getLogger("crows.expectations")

NUDGE_LIMIT = 3
EXPECTATION_QUESTION = "expectation"
PROMISE_RE = re.compile(
    r"\b(i'?ll|i\s+will|i'?m\s+going\s+to|i\s+shall|will\s+(?:have|send|deliver|post|get|finish)|"
    r"you'?ll\s+have|expect\s+it|back\s+(?:to\s+you\s+)?(?:in|by|within)|eta)\b",
    re.IGNORECASE,
)
# A decline that says why: more than the bare words a header-only reply is given.
BARE_DECLINES = {"declining.", "declining", "no.", "pass.", "pass"}
SUMMARY_PREFIX = "Owner summary"


# --- reading a message ---------------------------------------------------------------------


def read_expectation(text: str) -> Any:
    """Jev's `expectation` answer for a message, or None when Jev cannot answer. Called
    outside the transaction, like every Jev question (it may load a model)."""
    try:
        return jev_service.ask(EXPECTATION_QUESTION, text)
    except Exception:
        log.debug("Jev could not answer %r", EXPECTATION_QUESTION, exc_info=True)
        return None


def _jev_record(answer: Any) -> dict[str, Any]:
    if answer is None:
        return {}
    probs = getattr(answer, "probs", {}) or {}
    return {
        "choice": answer.choice,
        "band": answer.band,
        "p": round(float(probs.get(answer.choice, 0.0)), 4),
        "version": getattr(answer, "version", ""),
    }


def _jev_says(answer: Any, check: str, *, sure: bool = False) -> bool:
    return answer is not None and answer.choice == check and (answer.band == "high" or not sure)


# --- the record and its events -------------------------------------------------------------


def expectation_record(exp: Expectation) -> dict[str, Any]:
    """An expectation as the API and the events carry it (docs/GOVERNANCE.md)."""
    from flock.events import rfc3339

    return {
        "expectation_id": exp.expectation_id,
        "msg_id": exp.message.msg_id,
        "crow": exp.crow,
        "check": exp.check_name,
        "expected": exp.expected,
        "request_msg_id": exp.request.message.msg_id if exp.request_id and exp.request else "",
        "debate_id": exp.debate.debate_id if exp.debate_id and exp.debate else "",
        "status": exp.status,
        "due_at": rfc3339(exp.due_at),
        "due_from": exp.due_from,
        "nudges": exp.nudges,
        "nudge_limit": NUDGE_LIMIT,
        "nudge_msg_ids": list(exp.nudge_msg_ids or []),
        "scored": exp.scored,
        "confidence": round(exp.confidence, 4),
        "jev": exp.jev or {},
        "outcome_msg_id": exp.outcome_msg_id,
        "summary_msg_id": exp.summary_msg_id,
        "reason": exp.reason,
        "opened_at": rfc3339(exp.opened_at),
        "closed_at": rfc3339(exp.closed_at) if exp.closed_at else None,
    }


def _emit(name: str, exp: Expectation, record: dict[str, Any]) -> None:
    # On the firehose, with the room named in the payload: a room's own stream carries
    # its messages (docs/API.md, the event stream), and every nudge or summary is one.
    emit(name, {"nest_id": exp.nest.nest_id, **record})


def _schedule(exp: Expectation) -> None:
    from nests.tasks_chat import check_expectation_task

    # The task carries the due time it was scheduled for: a stale duplicate (an earlier
    # schedule, a start-up re-schedule) finds the row moved on and does nothing.
    check_expectation_task.using(run_after=exp.due_at).enqueue(exp.pk, exp.due_at.isoformat())


def _due_s() -> timedelta:
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
        due_at=due_at or now + _due_s(),
        due_from=due_from,
        confidence=1.0,
        jev=jev or {},
    )
    exp.expectation_id = f"exp-{exp.pk}"
    exp.save(update_fields=["expectation_id"])
    _emit("expectation.opened", exp, expectation_record(exp))
    _schedule(exp)
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
    record = expectation_record(exp)
    record["outcome"] = status
    _emit("expectation.closed", exp, record)
    return exp


# --- opening from a message ----------------------------------------------------------------


def _gist(text: str, words: int = 12) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def _open_for_crow(crow: str, request: ChatRequest | None, *, nest: Nest) -> Expectation | None:
    """What `crow` already owes that a new promise is about: on `request`; or, when the
    promise names no request ("Sorry, I'll have it in 2 minutes"), the one piece of work it
    owes in this room, if it owes exactly one (with several, the promise is its own)."""
    owed = (
        Expectation.objects.select_for_update()
        .filter(crow=crow, status__in=Expectation.LIVE, request__isnull=False)
        .exclude(check_name__in=(Expectation.Check.ROUNDS_COMPLETED, Expectation.Check.TURN_ORDER))
        .order_by("-id")
    )
    if request is not None:
        return owed.filter(request=request).first()
    in_room = list(owed.filter(nest=nest)[:2])
    return in_room[0] if len(in_room) == 1 else None


def _open_from(
    message: NestMessage,
    *,
    request: ChatRequest | None,
    claim: Claim | None,
    invocation: Invocation | None,
    answer: Any,
) -> Expectation | None:
    jev = _jev_record(answer)
    due = due_from_text(message.text)
    due_from = "text" if due is not None else "default"
    if claim is not None:
        promise = due is not None or _jev_says(answer, Expectation.Check.PROMISE_KEPT, sure=True)
        check = Expectation.Check.PROMISE_KEPT if promise else Expectation.Check.SINGLE_OWNER
        return open_expectation(
            message, crow=claim.crow, check=check, request=claim.request, due_at=due, due_from=due_from, jev=jev,
            expected=f"{claim.crow} claimed {claim.request.message.msg_id} (“{_gist(claim.request.message.text)}”): "
            f"deliver it, or decline with a reason",
        )
    if (
        message.kind == "request"
        and request is not None
        and request.message_id == message.id
        and invocation is not None
        and invocation.status == Invocation.Status.QUEUED
        and invocation.expect == "claim"
    ):
        return open_expectation(
            message, crow=invocation.crow, check=Expectation.Check.REQUESTER_ANSWER, request=request,
            due_at=due, due_from=due_from, jev=jev,
            expected=f"{invocation.crow} was asked {message.msg_id} (“{_gist(message.text)}”) by "
            f"{request.requester}: claim it, deliver it, or decline with a reason",
        )
    # A promise may come tagged as a claim of nothing in particular ("I'll have it in
    # five minutes" with no request named): it is still a promise.
    if message.author in (OWNER, HARNESS, SENTRY) or message.kind not in ("say", "request", "claim"):
        return None
    promised = bool(PROMISE_RE.search(message.text)) and due is not None
    if not promised and not _jev_says(answer, Expectation.Check.PROMISE_KEPT, sure=True):
        return None
    owed = _open_for_crow(message.author, request, nest=message.nest)
    if owed is not None:
        # A new promise about work already owed moves its due time; the nudge count stays,
        # so promising again is not progress.
        if due is not None:
            owed.due_at, owed.due_from = due, "text"
            owed.check_name = Expectation.Check.PROMISE_KEPT
            owed.save(update_fields=["due_at", "due_from", "check_name"])
            _schedule(owed)
        return owed
    what = f"on {request.message.msg_id}" if request is not None else f"in {message.msg_id}"
    return open_expectation(
        message, crow=message.author, check=Expectation.Check.PROMISE_KEPT, request=request,
        due_at=due, due_from=due_from, jev=jev,
        expected=f"{message.author} promised (“{_gist(message.text)}”): deliver {what}",
    )


# --- scoring -------------------------------------------------------------------------------


def _declined_with_reason(message: NestMessage) -> bool:
    return message.kind == "decline" and message.text.strip().lower() not in BARE_DECLINES and len(message.text.split()) >= 3


def _progress(exp: Expectation, message: NestMessage, request: ChatRequest | None) -> str:
    """Why `message` meets `exp` ("" if it does not)."""
    check = exp.check_name
    if check in (Expectation.Check.ROUNDS_COMPLETED, Expectation.Check.TURN_ORDER):
        return ""  # the debate closes its own
    same_request = exp.request_id is not None and request is not None and request.pk == exp.request_id
    if check == Expectation.Check.REQUESTER_ANSWER:
        if same_request and message.kind in ("claim", "deliver"):
            who = "" if message.author == exp.crow else f" ({message.author} took it)"
            return f"{message.author} answered with a {message.kind}{who}"
        if same_request and message.author == exp.crow and _declined_with_reason(message):
            return f"{exp.crow} declined with a reason"
        return ""
    if message.author != exp.crow:
        return ""
    if exp.request_id is not None:
        if same_request and message.kind == "deliver":
            return f"{exp.crow} delivered"
        if same_request and _declined_with_reason(message):
            return f"{exp.crow} declined with a reason"
        return ""
    if message.kind in ("deliver", "refer"):
        return f"{exp.crow} delivered"
    return ""


def _settled(exp: Expectation) -> str:
    """Why the work behind `exp` is done though no message met it ("" if it is not): Quill
    or Boss carried out the request themselves, it was relayed elsewhere, or (for a
    request) someone claimed it."""
    if exp.request_id is None or exp.check_name in (Expectation.Check.ROUNDS_COMPLETED, Expectation.Check.TURN_ORDER):
        return ""
    request = ChatRequest.objects.filter(pk=exp.request_id).first()
    if request is None:
        return ""
    if request.state in (ChatRequest.State.DELIVERED, ChatRequest.State.DECLINED, ChatRequest.State.RELAYED):
        return f"{request.message.msg_id} is {request.state}"
    if exp.check_name == Expectation.Check.REQUESTER_ANSWER and request.claims.exists():
        return f"{request.message.msg_id} is claimed"
    return ""


def _pending_confidence(exp: Expectation, now: datetime) -> float:
    """How sure the ledger is that a pending expectation is still on time: the share of
    its window left."""
    total = (exp.due_at - exp.opened_at).total_seconds()
    if total <= 0:
        return 0.0
    return max(0.0, min(1.0, (exp.due_at - now).total_seconds() / total))


def score_room(message: NestMessage, *, request: ChatRequest | None) -> list[Expectation]:
    """Score the room's open expectations against a new message; close the met ones."""
    met = []
    now = timezone.now()
    for exp in Expectation.objects.select_for_update().filter(nest=message.nest, status__in=Expectation.LIVE):
        why = _progress(exp, message, request)
        if why:
            met.append(close_expectation(exp, status=Expectation.Status.MET, by_msg_id=message.msg_id, reason=why))
        else:
            exp.scored = "missed" if exp.due_at <= now else "pending"
            exp.confidence = 1.0 if exp.due_at <= now else round(_pending_confidence(exp, now), 4)
            exp.save(update_fields=["scored", "confidence"])
    return met


def on_message(
    message: NestMessage,
    *,
    request: ChatRequest | None,
    claim: Claim | None,
    invocation: Invocation | None,
    answer: Any = None,
) -> None:
    """post_message's hook, inside its transaction: score the room, then open what the
    message creates. Harness and Sentry messages open nothing and meet nothing."""
    if message.author in (HARNESS, SENTRY):
        return
    score_room(message, request=request)
    _open_from(message, request=request, claim=claim, invocation=invocation, answer=answer)


# --- the timer: misses, nudges and the owner's summary -----------------------------------


def nudge_text(exp: Expectation, n: int) -> str:
    late = "is due" if exp.nudges == 0 and exp.due_from == "text" else "is overdue"
    return (
        f"[NUDGE {exp.message.msg_id}] [nudge {n}/{NUDGE_LIMIT}] @{exp.crow}, {exp.expectation_id} {late}: "
        f"{exp.expected}. Deliver it now, or decline with a reason; a reply with nothing new is not progress."
    )


def _summary_line(exp: Expectation) -> str:
    from flock.events import rfc3339

    return (
        f"- {exp.expectation_id} ({exp.check_name}) on {exp.message.msg_id}: {exp.expected}. "
        f"Due {rfc3339(exp.due_at)}, {exp.nudges}/{NUDGE_LIMIT} nudges."
    )


def send_summary(nest: Nest, exps: list[Expectation], *, why: str) -> NestMessage:
    """One harness message to the owner listing the room's open expectations (those
    escalated now first), and the expectations it escalates closed as `escalated`."""
    from nests.actions.messages import post_message

    ids = {e.pk for e in exps}
    live = Expectation.objects.filter(nest=nest, status__in=Expectation.LIVE).exclude(pk__in=ids)
    # The other open ones that are due too; those not due yet are only counted, so two
    # summaries a moment apart do not repeat a list of promises nobody has missed.
    overdue = list(live.filter(due_at__lte=timezone.now()).order_by("due_at", "id"))
    pending = live.filter(due_at__gt=timezone.now()).count()
    head = f"{SUMMARY_PREFIX} for @owner: {why}. Open expectations in {nest.name}:"
    lines = [_summary_line(e) for e in exps + overdue]
    tail = [f"And {pending} more not due yet."] if pending else []
    text = _fit_summary(head, lines, tail, panel=f"/api/nests/{nest.nest_id}/expectations")
    summary = post_message(
        nest.nest_id, author=HARNESS, text=text, kind="say", to=OWNER,
        refers_to=exps[0].message.msg_id, tagged_by="header",
    )
    for exp in exps:
        exp.summary_msg_id = summary.msg_id
        close_expectation(exp, status=Expectation.Status.ESCALATED, by_msg_id=summary.msg_id, reason=why)
    return summary


# A nest message's length limit (nests.actions.messages.TEXT_MAX, which imports this module).
SUMMARY_MAX = 2000


def _fit_summary(head: str, lines: list[str], tail: list[str], *, panel: str, limit: int = SUMMARY_MAX) -> str:
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


def send_nudge(exp: Expectation) -> NestMessage:
    """Nudge n/3: a harness message to the crow, which invokes it (an exchange)."""
    from nests.actions.messages import post_message

    n = exp.nudges + 1
    nudge = post_message(
        exp.nest.nest_id, author=HARNESS, text=nudge_text(exp, n), kind="nudge", to=exp.crow,
        refers_to=exp.message.msg_id, tagged_by="header",
    )
    exp.nudges = n
    exp.nudge_msg_ids = [*(exp.nudge_msg_ids or []), nudge.msg_id]
    exp.status = Expectation.Status.MISSED  # still owed: a deliver meets it, late
    exp.scored, exp.confidence = "missed", 1.0
    exp.due_at = timezone.now() + _due_s()
    exp.save(update_fields=["nudges", "nudge_msg_ids", "status", "scored", "confidence", "due_at"])
    _schedule(exp)
    return nudge


def check_expectation(expectation_pk: int, due_iso: str = "") -> str:
    """The timer: score one expectation at its due time. Idempotent: a closed expectation,
    or a stale task whose due time is no longer the row's, does nothing."""
    with transaction.atomic():
        lock_event_log()
        exp = (
            Expectation.objects.select_for_update()
            .select_related("nest", "message", "request", "request__message")
            .filter(pk=expectation_pk)
            .first()
        )
        if exp is None or exp.status not in Expectation.LIVE:
            return "closed"
        if due_iso and exp.due_at.isoformat() != due_iso:
            return "stale"
        now = timezone.now()
        if exp.due_at > now:
            _schedule(exp)  # too early (a clock step, a hand-run task): again at the due time
            return "not due"
        if exp.check_name == Expectation.Check.TURN_ORDER and exp.debate is not None and exp.debate.cued != exp.crow:
            # Spoke out of turn: nudged on the spot; it waits for its cue, not a clock.
            return "waiting"
        if _speaking(exp):
            # The crow has not had its say yet (on the work, or on the last nudge); when
            # its invocation ends, restart_timers checks again.
            return "waiting"
        Nest.objects.select_for_update().filter(pk=exp.nest_id).first()
        settled = _settled(exp)
        if settled:
            close_expectation(exp, status=Expectation.Status.MET, reason=settled)
            return "met"
        crow = Crow.objects.filter(name=exp.crow).first()
        if crow is None or crow.status != Crow.Status.ACTIVE:
            state = crow.status if crow is not None else "gone"
            send_summary(exp.nest, [exp], why=f"{exp.crow} is {state} and cannot be nudged")
            return "escalated"
        if exp.crow not in crow_members(exp.nest):
            # Taken out of the room (the admin): a nudge there could not be posted, and the
            # promise would wait for ever.
            send_summary(exp.nest, [exp], why=f"{exp.crow} is no longer in {exp.nest.nest_id} and cannot be nudged there")
            return "escalated"
        if exp.nudges >= NUDGE_LIMIT:
            # The loop guard (docs/CHATROOM.md): three nudges with no progress, whatever Jev says.
            summary = send_summary(
                exp.nest, [exp], why=f"{exp.crow} made no progress on {exp.expectation_id} after {NUDGE_LIMIT} nudges"
            )
            from nests.actions.chat import sentry

            sentry.on_repeated_miss(
                exp.crow, nest_id=exp.nest.nest_id, expectation_id=exp.expectation_id, misses=exp.nudges,
                evidence=f"Expected: {exp.expected}. Nudges: {', '.join(exp.nudge_msg_ids or [])}. "
                f"Summary to the owner: {summary.msg_id}.",
                msg_id=(exp.nudge_msg_ids or [exp.message.msg_id])[-1],
            )
            return "escalated"
        budget = budgets.locked_budget(exp.nest)
        if not budgets.can_spend(budget):
            due = list(
                Expectation.objects.select_for_update()
                .filter(nest=exp.nest, status__in=Expectation.LIVE, due_at__lte=now)
                .exclude(pk=exp.pk)
            )
            send_summary(exp.nest, [exp, *due], why="the room's exchange budget is spent, so no more nudges")
            return "escalated"
        send_nudge(exp)
        return f"nudged {exp.nudges}/{NUDGE_LIMIT}"


def _speaking(exp: Expectation) -> bool:
    return Invocation.objects.filter(
        nest_id=exp.nest_id, crow=exp.crow, status__in=(Invocation.Status.QUEUED, Invocation.Status.RUNNING)
    ).exists()


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
                exp.due_at = now + _due_s()
                exp.save(update_fields=["due_at"])
                _schedule(exp)
            elif exp.due_at <= now:
                _schedule(exp)


def reschedule_expectation_checks() -> int:
    """Start-up recovery: a check for every open expectation at its due time (a duplicate
    is harmless: the check is idempotent and stale ones do nothing)."""
    count = 0
    with transaction.atomic():
        for exp in Expectation.objects.filter(status__in=Expectation.LIVE):
            _schedule(exp)
            count += 1
    return count


def nudged_expectation(message: NestMessage) -> Expectation | None:
    """The open expectation a harness nudge is about."""
    if message.kind != "nudge" or not message.refers_to:
        return None
    return (
        Expectation.objects.filter(
            nest=message.nest, message__msg_id=message.refers_to, crow=message.to, status__in=Expectation.LIVE
        )
        .select_related("request", "request__message")
        .order_by("-id")
        .first()
    )


def expect_for_nudge(message: NestMessage) -> str:
    """What a nudged crow is asked for: claim (a request), deliver (a claim or promise on
    a request), or say."""
    exp = nudged_expectation(message)
    if exp is None:
        return "say"
    if exp.check_name == Expectation.Check.REQUESTER_ANSWER:
        return "claim"
    if exp.request_id is not None and exp.check_name in (Expectation.Check.SINGLE_OWNER, Expectation.Check.PROMISE_KEPT):
        return "deliver"
    return "say"
