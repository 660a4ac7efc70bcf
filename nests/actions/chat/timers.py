"""The expectation ledger's timer (docs/GOVERNANCE.md): an expectation at its due time is
met (its work settled meanwhile), nudged, or summarised to the owner, and after the last
nudge the Sentry hears of the repeated miss. The task nests.tasks_chat.check_expectation_task
runs it; what it says goes through the chat core's loop, so a nudge invokes its crow.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from flock.events import lock_event_log
from nests.actions.chat import budgets, react
from nests.actions.chat.effects import Effects, Say
from nests.actions.chat.flags import on_repeated_miss
from nests.actions.chat.ledger import close_expectation, nudge, nudge_limit, nudge_refusal, schedule, summary
from nests.models import ChatRequest, Expectation, Invocation, Nest, NestMessage
from nests.queries_ledger import NUDGE_LIMIT


def _say(exp: Expectation, said: Say) -> NestMessage:
    return react.apply(Effects(say=[said]), room=exp.nest)[0]


def _settled(exp: Expectation) -> str:
    """Why the work behind `exp` is done though no message met it ("" if it is not): Quill
    or Boss carried out the request themselves, it was relayed elsewhere, or (for a
    request) someone claimed it."""
    if exp.request_id is None or exp.check_name in (*Expectation.DEBATE_CHECKS, *Expectation.CONDUCT_CHECKS):
        # A debate closes its own; how work was done (sourced, in role, a distinct lens) is
        # not settled by the work being delivered.
        return ""
    request = ChatRequest.objects.filter(pk=exp.request_id).first()
    if request is None:
        return ""
    if request.state in (ChatRequest.State.DELIVERED, ChatRequest.State.DECLINED, ChatRequest.State.RELAYED):
        return f"{request.message.msg_id} is {request.state}"
    if exp.check_name == Expectation.Check.REQUESTER_ANSWER and request.claims.exists():
        return f"{request.message.msg_id} is claimed"
    return ""




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
            schedule(exp)  # too early (a clock step, a hand-run task): again at the due time
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
        refusal = nudge_refusal(exp.crow, exp.nest)
        if refusal:
            # Undeliverable, and the promise would wait for ever: the owner hears of it.
            _say(exp, summary(exp.nest, [exp], why=refusal))
            return "escalated"
        if exp.check_name in Expectation.ONCE_CHECKS and exp.nudges >= nudge_limit(exp):
            # Nudged once, as these are (docs/GOVERNANCE.md, 6): the owner hears of it now.
            _say(exp, summary(exp.nest, [exp], why=f"{exp.crow} was nudged once on {exp.expectation_id} and said nothing new"))
            return "escalated"
        if exp.nudges >= NUDGE_LIMIT:
            # The loop guard (docs/CHATROOM.md): three nudges with no progress, whatever Jev says.
            told = _say(exp, summary(
                exp.nest, [exp], why=f"{exp.crow} made no progress on {exp.expectation_id} after {NUDGE_LIMIT} nudges"
            ))
            on_repeated_miss(
                exp.crow, nest_id=exp.nest.nest_id, expectation_id=exp.expectation_id, misses=exp.nudges,
                evidence=f"Expected: {exp.expected}. Nudges: {', '.join(exp.nudge_msg_ids or [])}. "
                f"Summary to the owner: {told.msg_id}.",
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
            _say(exp, summary(exp.nest, [exp, *due], why="the room's exchange budget is spent, so no more nudges"))
            return "escalated"
        _say(exp, nudge(exp))
        return f"nudged {exp.nudges}/{NUDGE_LIMIT}"


def _speaking(exp: Expectation) -> bool:
    return Invocation.objects.filter(
        nest_id=exp.nest_id, crow=exp.crow, status__in=(Invocation.Status.QUEUED, Invocation.Status.RUNNING)
    ).exists()
