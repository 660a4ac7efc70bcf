"""The owner's exact decision phrase said in a room answers that decision, and so does an
option of the room's open choice ("B", "Monday", "B: Monday"; docs/GOVERNANCE.md)."""

from __future__ import annotations

from flock.errors import NotFound
from flock.vocab import OWNER
from nests.actions.chat.effects import NOTHING, Effects, Posted
from trust.actions import answer_decision
from trust.queries import open_decision_by_phrase

ANSWERED = Effects(done=True)


def react(posted: Posted) -> Effects:
    """The phrase (or option) answers the decision, and the message is nothing more (`done`), unless
    the decision timed out a moment ago (closed as such): then it is only said."""
    message = posted.message
    if message.author != OWNER or posted.harness:
        return NOTHING
    decision = open_decision_by_phrase(posted.room.nest_id, message.text)
    if decision is None:
        return NOTHING
    try:
        answer_decision(decision, answer=message.text, by=OWNER)
    except NotFound:
        return NOTHING
    return ANSWERED
