"""Quill brings the owner decisions (docs/GOVERNANCE.md, "1. Quill brings decisions").

Two reactors (nests.actions.chat.react):

- `react`: a crow's post opening with `[ASK_OWNER <id>] … A: … | B: … | recommend A because …`
  (flock.brains.header.parse_ask_owner) is a decision it needs from the owner. Quill says
  it to the owner in the room and opens a `choice` decision on that message: the options,
  the recommendation with its reason, the room, the asking crow, the deadline. An ask the
  owner could not answer (no options, no recommendation) gets one harness line to its
  crow with the grammar, and opens nothing.

The owner saying an option in the room ("B", "Monday", "B: Monday") answers the room's
open choice through the decision phrase reactor (nests.actions.chat.decision_phrase).

What follows a closed choice (the outcome said in the room, the asking crow invoked) is
nests.actions.chat.choices, the hook every close runs through, whoever answered.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from flock.brains.header import ASK_OWNER_GRAMMAR, AskOwner, parse_ask_owner
from flock.events import rfc3339
from flock.vocab import HARNESS, OWNER
from nests import queries
from nests.actions.chat.effects import NOTHING, Effects, Posted, Say
from nests.models import Nest, NestMessage
from trust.actions import open_decision
from trust.models import Decision


def speaker() -> str:
    """Who brings decisions to the owner: Quill, or the harness when Quill cannot speak."""
    quill = queries.quill()
    return quill.name if quill is not None and quill.status == quill.Status.ACTIVE else HARNESS


def announcement(ask: AskOwner, *, crow: str) -> str:
    deadline = rfc3339(timezone.now() + timedelta(seconds=settings.CROWS_DECISION_TIMEOUT_S))
    letters = " or ".join(f"“{o.split(':', 1)[0]}”" for o in ask.options)
    question = f" {ask.question}" if ask.question else ""
    return (
        f"@owner, {crow} needs you to choose ({ask.ask_id}):{question} {' | '.join(ask.options)}. "
        f"{crow} recommends {ask.recommended} because {ask.reason}. Pick one on the decision's card, "
        f"or say {letters} here. Unanswered by {deadline}, it closes with no choice, and {crow} "
        "does not go ahead on its own recommendation."
    )


def _opener(ask: AskOwner, *, crow: str, room: Nest, asked: NestMessage) -> Callable[[NestMessage], None]:
    def open_choice(said: NestMessage) -> None:
        open_decision(
            subject=ask.ask_id,
            question=ask.question or f"{crow} asks you to choose",
            options=ask.options,
            recommendation=f"{ask.recommended} because {ask.reason}",
            kind=Decision.Kind.CHOICE,
            crow=crow,
            nest_id=room.nest_id,
            msg_id=said.msg_id,
            refers_to=asked.msg_id,
        )

    return open_choice


def react(posted: Posted) -> Effects:
    """A crow's [ASK_OWNER …] post: Quill says it to the owner and opens the choice."""
    message = posted.message
    if posted.harness or posted.crow is None or message.author == OWNER:
        return NOTHING
    ask = parse_ask_owner(message.text)
    if ask is None:
        return NOTHING
    crow = message.author
    if ask.problem:
        return Effects(say=[Say(
            author=HARNESS, to=crow, refers_to=message.msg_id,
            text=(
                f"@{crow}, your [ASK_OWNER {ask.ask_id}] brings the owner no decision: {ask.problem}. "
                f"Write it as {ASK_OWNER_GRAMMAR}."
            ),
        )])
    return Effects(say=[Say(
        author=speaker(), to=OWNER, refers_to=message.msg_id, text=announcement(ask, crow=crow),
        then=_opener(ask, crow=crow, room=posted.room, asked=message),
    )])
