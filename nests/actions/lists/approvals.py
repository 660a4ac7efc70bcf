"""The pipeline's side of an owner or timeout verdict: resume the item, or skip it.

Trust calls `resume_after_verdict` (registered with `trust.actions.on_verdict`) inside
the verdict's transaction, so an item never sits with a verdict it has not acted on.
A timeout counts as a rejection (fail safe), with its own reason.
"""

from __future__ import annotations

from flock.db import action_atomic
from nests.actions.lists.ending import (
    OUTPUT_REJECTED,
    OUTPUT_TIMEOUT,
    TRIAGE_REJECTED,
    TRIAGE_TIMEOUT,
    lock_item,
    mark_answered,
    skip_item,
)
from nests.actions.lists.progress import start_flights
from nests.models import Item
from trust.models import Target, Verdict

# Keyed by str pairs: looked up with a verdict's `target` and `verdict`, str fields
# (the Target and Value members are str).
_SKIP_REASONS: dict[tuple[str, str], str] = {
    (Target.TRIAGE, Verdict.Value.REJECTED): TRIAGE_REJECTED,
    (Target.TRIAGE, Verdict.Value.TIMEOUT): TRIAGE_TIMEOUT,
    (Target.OUTPUT, Verdict.Value.REJECTED): OUTPUT_REJECTED,
    (Target.OUTPUT, Verdict.Value.TIMEOUT): OUTPUT_TIMEOUT,
}


def resume_after_verdict(verdict: Verdict) -> Item | None:
    with action_atomic():
        item = lock_item(verdict.item_id)
        if item is None:
            return None
        waiting = Item.Stage.TRIAGE_REVIEW if verdict.target == Target.TRIAGE else Item.Stage.OUTPUT_REVIEW
        if item.stage != waiting:
            return item
        if not verdict.passed:
            return skip_item(item, reason=_SKIP_REASONS[(verdict.target, verdict.verdict)])
        if verdict.target == Target.TRIAGE:
            return start_flights(item)
        return mark_answered(item)
