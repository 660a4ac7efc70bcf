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
from datetime import datetime
from typing import Any

from django.utils import timezone

from flock import jev as jev_service
from flock.vocab import HARNESS_AUTHORS, OWNER, MessageKind
from nests.actions.chat import checks
from nests.actions.chat.budgets import waits_for_a_turn
from nests.actions.chat.corrections import CORRECTION_REASON, corrected_message
from nests.actions.chat.due import due_from_text
from nests.actions.chat.effects import NOTHING, Effects, Posted
from nests.actions.chat.ledger import close_expectation, open_expectation, schedule
from nests.models import ChatRequest, Claim, Expectation, Invocation, Nest, NestMessage

log = logging.getLogger("crows.expectations")

EXPECTATION_QUESTION = "expectation"
PROMISE_RE = re.compile(
    r"\b(i'?ll|i\s+will|i'?m\s+going\s+to|i\s+shall|will\s+(?:have|send|deliver|post|get|finish)|"
    r"you'?ll\s+have|expect\s+it|back\s+(?:to\s+you\s+)?(?:in|by|within)|eta)\b",
    re.IGNORECASE,
)
# A decline that says why: more than the bare words a header-only reply is given.
BARE_DECLINES = {"declining.", "declining", "no.", "pass.", "pass"}


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
        .exclude(check_name__in=(*Expectation.DEBATE_CHECKS, *Expectation.CONDUCT_CHECKS))
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
    if invocation is not None and invocation.reason == CORRECTION_REASON and (
        invocation.status == Invocation.Status.QUEUED or waits_for_a_turn(invocation)
    ):
        # The owner corrected a crow (nests.actions.chat.corrections): it owes one answer.
        corrected = corrected_message(message)
        about = f" its {corrected.msg_id}" if corrected is not None else ""
        return open_expectation(
            message, crow=invocation.crow, check=Expectation.Check.CORRECTION_HANDLED, jev=jev,
            expected=f"{invocation.crow} was corrected on{about} in {message.msg_id} (“{_gist(message.text)}”): "
            f"acknowledge it once, and redo the work or explain",
        )
    if claim is not None:
        promise = due is not None or _jev_says(answer, Expectation.Check.PROMISE_KEPT, sure=True)
        check = Expectation.Check.PROMISE_KEPT if promise else Expectation.Check.SINGLE_OWNER
        return open_expectation(
            message, crow=claim.crow, check=check, request=claim.request, due_at=due, due_from=due_from, jev=jev,
            expected=f"{claim.crow} claimed {claim.request.message.msg_id} (“{_gist(claim.request.message.text)}”): "
            f"deliver it, or decline with a reason",
        )
    if (
        message.kind == MessageKind.REQUEST
        and request is not None
        and request.message_id == message.id
        and invocation is not None
        and (invocation.status == Invocation.Status.QUEUED or waits_for_a_turn(invocation))
        and invocation.expect == MessageKind.CLAIM
    ):
        return open_expectation(
            message, crow=invocation.crow, check=Expectation.Check.REQUESTER_ANSWER, request=request,
            due_at=due, due_from=due_from, jev=jev,
            expected=f"{invocation.crow} was asked {message.msg_id} (“{_gist(message.text)}”) by "
            f"{request.requester}: claim it, deliver it, or decline with a reason",
        )
    # A promise may come tagged as a claim of nothing in particular ("I'll have it in
    # five minutes" with no request named): it is still a promise.
    if message.author in (OWNER, *HARNESS_AUTHORS) or message.kind not in (MessageKind.SAY, MessageKind.REQUEST, MessageKind.CLAIM):
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
            schedule(owed)
        return owed
    what = f"on {request.message.msg_id}" if request is not None else f"in {message.msg_id}"
    return open_expectation(
        message, crow=message.author, check=Expectation.Check.PROMISE_KEPT, request=request,
        due_at=due, due_from=due_from, jev=jev,
        expected=f"{message.author} promised (“{_gist(message.text)}”): deliver {what}",
    )


# --- scoring -------------------------------------------------------------------------------


def _declined_with_reason(message: NestMessage) -> bool:
    return message.kind == MessageKind.DECLINE and message.text.strip().lower() not in BARE_DECLINES and len(message.text.split()) >= 3


def _progress(exp: Expectation, message: NestMessage, request: ChatRequest | None) -> str:
    """Why `message` meets `exp` ("" if it does not)."""
    check = exp.check_name
    if check in Expectation.DEBATE_CHECKS:
        return ""  # the debate closes its own
    if check in Expectation.CONDUCT_CHECKS:
        return checks.progress(exp, message)
    same_request = exp.request_id is not None and request is not None and request.pk == exp.request_id
    if check == Expectation.Check.REQUESTER_ANSWER:
        if same_request and message.kind in (MessageKind.CLAIM, MessageKind.DELIVER):
            who = "" if message.author == exp.crow else f" ({message.author} took it)"
            return f"{message.author} answered with a {message.kind}{who}"
        if same_request and message.author == exp.crow and _declined_with_reason(message):
            return f"{exp.crow} declined with a reason"
        return ""
    if message.author != exp.crow:
        return ""
    if exp.request_id is not None:
        if same_request and message.kind == MessageKind.DELIVER:
            return f"{exp.crow} delivered"
        if same_request and _declined_with_reason(message):
            return f"{exp.crow} declined with a reason"
        return ""
    if message.kind in (MessageKind.DELIVER, MessageKind.REFER):
        return f"{exp.crow} delivered"
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
    # of=self: PostgreSQL refuses FOR UPDATE on the nullable side of the outer join to the
    # request, and only the expectations are written here.
    for exp in Expectation.objects.select_for_update(of=("self",)).select_related("request", "request__message").filter(
        nest=message.nest, status__in=Expectation.LIVE
    ):
        why = _progress(exp, message, request)
        if why:
            met.append(close_expectation(exp, status=Expectation.Status.MET, by_msg_id=message.msg_id, reason=why))
        else:
            exp.scored = "missed" if exp.due_at <= now else "pending"
            exp.confidence = 1.0 if exp.due_at <= now else round(_pending_confidence(exp, now), 4)
            exp.save(update_fields=["scored", "confidence"])
    return met


def react(posted: Posted) -> Effects:
    """The ledger as a reactor: score the room against the message, then open what it
    creates (after dispatch, which decides the invocation a request's expectation is
    about). It writes the ledger only, and asks for nothing to be said or invoked: the
    timer nudges (nests.actions.chat.timers). Harness and Sentry messages open nothing
    and meet nothing."""
    message = posted.message
    if message.author in HARNESS_AUTHORS:
        return NOTHING
    score_room(message, request=posted.request)
    _open_from(
        message, request=posted.request, claim=posted.claim, invocation=posted.invoked, answer=posted.expectation_answer
    )
    return NOTHING
