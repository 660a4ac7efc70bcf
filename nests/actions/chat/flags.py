"""The Sentry flagging from outside a post (docs/GOVERNANCE.md): the expectation ledger's
repeated-miss hook, and a flag raised directly. Both say the flag through the chat core's
loop; a breach in a post is the sentry reactor's.
"""

from __future__ import annotations

from flock.models import Crow
from nests.actions.chat import react
from nests.actions.chat.sentry import GUARDRAIL_SCORE, Finding, flag
from nests.models import Nest
from trust.models import Breach, Decision
from trust.queries import open_decision_for_crow


def flag_breach(crow: Crow, *, nest: Nest, finding: Finding, offending: str = "") -> Decision | None:
    """Log the breach and, on the crow's first breach on this subject, quarantine it, flag
    it in the room and open the owner's decision, all in the caller's transaction.
    Returns the decision, or None when the breach was logged only."""
    effects = flag(crow, nest=nest, finding=finding, offending=offending)
    if not effects.say:
        return None
    react.apply(effects, room=nest)
    return open_decision_for_crow(crow.name)


def on_repeated_miss(
    crow: str,
    *,
    nest_id: str,
    expectation_id: str,
    misses: int,
    evidence: str,
    score: float = GUARDRAIL_SCORE,
    msg_id: str = "",
) -> Decision | None:
    """The expectation ledger's hook: `crow` missed expectation `expectation_id` in room
    `nest_id` again after `misses` nudges. The Sentry logs a `repeated_misses` breach
    (score: Jev's miss confidence, or 1.0 when the harness's loop guard counted it) and,
    the first time for this crow and expectation, quarantines, flags (`refers_to`
    `msg_id`, the expectation's message or the last nudge) and opens the owner's
    decision. Call it inside the ledger's transaction. Returns the decision, or None."""
    found = Crow.objects.filter(name=crow).first()
    nest = Nest.objects.filter(nest_id=nest_id).first()
    if found is None or nest is None:
        return None
    finding = Finding(
        Breach.Kind.REPEATED_MISSES, score,
        f"{crow} missed {expectation_id} after {misses} nudges. {evidence}".strip(),
        subject=expectation_id,
    )
    return flag_breach(found, nest=nest, finding=finding, offending=msg_id)
