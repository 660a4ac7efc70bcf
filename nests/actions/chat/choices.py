"""After an owner's choice closes (docs/GOVERNANCE.md, "1. Quill brings decisions"): the
outcome is said in the room by Quill, to the crow that asked, and that message invokes
the crow with it. A timed-out choice tells the crow nobody chose: it must not go ahead on
its own recommendation.

Wired in NestsConfig.ready() as a trust `on_decision_closed` hook, so every close goes
through it, whoever closed it (the card, the API, the owner's word in the room, the admin,
the timeout). It runs inside the closing transaction and applies its effects through
`react.apply`, as the chat core's other entry points from outside a post do.
"""

from __future__ import annotations

from flock.models import Crow
from nests import queries
from nests.actions.chat import asks, react
from nests.actions.chat.effects import Effects, Invoke, Say
from nests.models import Nest
from trust.models import Decision

DECISION_REASON = "decision"


def outcome_text(decision: Decision) -> str:
    crow = decision.crow
    if decision.outcome == Decision.Outcome.TIMEOUT:
        return (
            f"@{crow}, nobody chose on {decision.subject} ({decision.decision_id}, “{decision.question}”) "
            f"by the deadline. No choice was made: do not go ahead on your own recommendation "
            f"({decision.recommendation}). Wait, or ask the owner again."
        )
    by = "the owner" if decision.answered_by == "owner" else decision.answered_by
    return (
        f"@{crow}, {by} chose {decision.outcome} on {decision.subject} "
        f"({decision.decision_id}, “{decision.question}”). Go ahead with that choice."
    )


def hand_back_choice(decision: Decision) -> None:
    """The closed choice said to its crow in its room, invoking the crow (active, still a
    member). Choices without an asking crow or a room (a phrase decision) are not ours."""
    if decision.kind != Decision.Kind.CHOICE or decision.phrase or not decision.crow or not decision.nest_id:
        return
    room = Nest.objects.select_for_update().filter(nest_id=decision.nest_id).first()
    if room is None:
        return
    crow = Crow.objects.filter(name=decision.crow).first()
    invoke = []
    if crow is not None and crow.status == Crow.Status.ACTIVE and crow.name in queries.crow_members(room):
        invoke = [Invoke(crow.name, DECISION_REASON, "say")]
    react.apply(Effects(say=[Say(
        author=asks.speaker(), to=decision.crow, refers_to=decision.refers_to, text=outcome_text(decision),
        invoke=invoke,
    )]), room=room)
