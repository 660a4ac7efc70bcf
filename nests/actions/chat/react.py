"""The chat core's loop (docs/CHATROOM.md, "The chat core"): what a stored message causes.

Every rule of the room is a reactor: it reads the room and the message just stored
(`Posted`) and returns `Effects` (messages to say, crows to invoke, whether the rest stand
down). They run in the order of REACTORS, one after the other, in the transaction that
stored the message; after each, this module applies what it returned, so a later reactor
reads what an earlier one decided (`posted.request`, `posted.claim`, `posted.invoked`).

A message the loop says is a message like any other: the reactors react to it in turn
(a nudge invokes its crow, a moderator's cue its speaker) before its `opens` and `then`
are applied. The loop stops when nothing new is asked, or at MAX_DEPTH says deep, where
it says so in the log and leaves the last message unreacted to.

This module is the only one that applies effects, and the only chat module that queues a
crow's invocation (through the hook in nests.actions.chat.queue).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import transaction

from flock.events import lock_event_log
from flock.vocab import HARNESS, OWNER
from nests.actions.chat import (
    asks,
    budgets,
    checks,
    debates,
    decision_phrase,
    dispatch,
    expectations,
    ledger,
    met,
    orchestration,
    regulate,
    sentry,
    silent,
    work,
)
from nests.actions.chat.effects import Effects, Invoke, Posted, Say
from nests.actions.chat.queue import enqueue_invocation
from nests.actions.chat.room import say
from nests.models import Invocation, Nest, NestBudget, NestMessage

log = logging.getLogger("crows.chat")

Reactor = Callable[[Posted], Effects]

# The rules of the room, in the order they read a message. A reactor that returns
# `done` stands the rest down (a breach changes nothing else; the owner's phrase answered
# a decision and is not talk).
REACTORS: tuple[tuple[str, Reactor], ...] = (
    ("sentry", sentry.react),  # a crow's breach: quarantine, flag, owner's decision
    ("decision phrase", decision_phrase.react),  # the owner's exact phrase (or a choice's option) answers a decision
    ("ask owner", asks.react),  # a crow's [ASK_OWNER …]: Quill opens the owner's choice
    ("work", work.react),  # the request opened, the claim made, the delivery judged, the decline
    ("dispatch", dispatch.react),  # who answers: the one crow to invoke
    ("expectations", expectations.react),  # the ledger: scored, and what the message opens
    ("jev judges", met.react),  # Jev reads the open expectations against the message: met, missed
    ("delivery checks", checks.react),  # a delivery unsourced, outside the crow's role, a restated lens
    ("debates", debates.react),  # a cued turn moves the debate on; out of turn is nudged
    ("orchestration", orchestration.react),  # Quill's or Boss's pick of a crow, scored
    ("budget watch", regulate.budget_watch),  # Boss: the room's tokens run low, a top-up proposed
    ("quarantine notice", sentry.quarantine_notice),  # a quarantined crow addressed: why no answer
    ("not a participant", silent.react),  # the Sentry or the Elder addressed: what they do instead
)
# How many says deep one post may go (a cue answered by a nudge answered by ...).
MAX_DEPTH = 8


def react(posted: Posted) -> None:
    """Run every reactor on a stored message, in order, applying what each returns."""
    for _name, reactor in REACTORS:
        effects = reactor(posted)
        _apply(posted, effects)
        if effects.done:
            return


def apply(effects: Effects, *, room: Nest, invocation: Invocation | None = None) -> list[NestMessage]:
    """Apply effects from outside a post (a timer, a hook, a moderator's move): what they
    say is reacted to as every message is. Returns the messages said, in order."""
    with transaction.atomic():
        lock_event_log()
        return [speak(s, room=room, invocation=invocation) for s in effects.say]


def speak(said: Say, *, room: Nest, invocation: Invocation | None = None, depth: int = 0) -> NestMessage:
    """Say one message (in `said.nest`, else `room`) and let the reactors react to it."""
    target = said.nest or room
    message = say(
        target, author=said.author, text=said.text, kind=said.kind, to=said.to, refers_to=said.refers_to,
    )
    posted = Posted(room=target, message=message, harness=True, invocation=said.invocation or invocation, depth=depth + 1)
    if depth >= MAX_DEPTH:
        log.warning(
            "chat loop bound hit: %s is %d says deep (MAX_DEPTH %d); the reactors do not read it",
            message.msg_id, depth, MAX_DEPTH,
        )
    else:
        react(posted)
    if said.invoke:
        _apply(posted, Effects(invoke=said.invoke))
    for expect in said.opens:
        ledger.open_expectation(
            message, crow=expect.crow, check=expect.check, expected=expect.expected, debate=expect.debate,
            request=expect.request, due_at=expect.due_at,
        )
    if said.then is not None:
        said.then(message)
    return message


def _apply(posted: Posted, effects: Effects) -> None:
    if effects.resume:
        budgets.resume_waiting(posted.room, _budget(posted), effects.resume)
    for invoke in effects.invoke:
        posted.invoked = _invoke(posted, invoke)
    for said in effects.say:
        # What a said message causes may spend from the budget through a row of its own,
        # so this post's copy is read again after it.
        posted.budget = None
        speak(said, room=posted.room, depth=posted.depth)


def _budget(posted: Posted) -> NestBudget:
    """The room's budget row, locked: as the post wrote it when it did (the owner's turn),
    else read and locked once for the post (the post holds the room's row lock)."""
    if posted.budget is None:
        posted.budget = budgets.locked_budget(posted.room, room_locked=True)
    return posted.budget


def _max_chain() -> int:
    return max(1, settings.CROWS_EXCHANGES_PER_TURN)


def _invoke(posted: Posted, invoke: Invoke) -> Invocation:
    """Spend an exchange for the crow and queue it, or record why not.

    The loop guard: every invocation spends one of the room's exchanges, which only an
    owner message (or top-up) restores, and a chain of invocations each caused by the
    previous one's reply stops at CROWS_EXCHANGES_PER_TURN links even if the owner keeps
    posting meanwhile. Both hold whatever the brains say."""
    nest = posted.room  # the post holds the room's row lock
    message = posted.message
    parent = posted.invocation
    depth = (parent.depth + 1) if parent is not None else 1
    budget = _budget(posted)
    granted = False
    if not budgets.can_spend(budget):
        off = budget.exchanges_granted == 0 and budgets.tokens_left(budget) > 0
        refusal = budgets.CROWS_OFF if off else budgets.BUDGET_SPENT
    elif depth > max(_max_chain(), budget.exchanges_granted):
        refusal = f"a chain of {depth - 1} crow invocations reached the loop guard"
    else:
        budget, granted = budgets.take_exchange(nest, budget=budget)
        refusal = "" if granted else budgets.BUDGET_SPENT
    invocation = Invocation.objects.create(
        nest=nest, crow=invoke.crow, trigger=message, reason=invoke.reason, expect=invoke.expect, fit=invoke.fit,
        candidates=invoke.candidates, parent=parent, depth=depth, turn=budget.turn,
        status=Invocation.Status.SKIPPED if refusal else Invocation.Status.QUEUED, error=refusal,
    )
    if invoke.fit is not None and invoke.candidates:
        # Every pick by fit is logged with what it weighed (docs/GOVERNANCE.md, 7a).
        orchestration.log_dispatch_pick(
            message, crow=invoke.crow, reason=invoke.reason, candidates=invoke.candidates, task_type=invoke.task_type,
        )
    if refusal:
        if refusal == budgets.BUDGET_SPENT and budgets.tokens_left(budget) > 0:
            # Nobody is left waiting in silence: the room hears who was not invoked, and the
            # crow answers when the room next has a turn (budgets.waiting_for_a_turn).
            notice = budgets.stalled_notice(budget, crow=invoke.crow, message=message)
            speak(Say(author=HARNESS, text=notice, to=OWNER, refers_to=message.msg_id), room=nest, depth=posted.depth)
            posted.budget = None  # read again after what the notice causes, as above
        elif refusal == budgets.BUDGET_SPENT:
            budgets.announce_spent(nest, budget)
        return invocation
    enqueue_invocation(invocation.id)
    budgets.announce_wind_down(nest, budget)
    return invocation
