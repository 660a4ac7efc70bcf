"""The events the trust app emits: each name registered with its payload's TypedDict, the
one statement of its fields (docs/API.md, "Events", describes them for readers). The
emitting action builds the TypedDict; `emit` adds `ts`, and `list_id`/`nest_id` when the
event is on that stream."""

# No `from __future__ import annotations`: TypedDict reads NotRequired from the real
# annotations, not from strings, to know which keys are optional.
from typing import NotRequired, TypedDict

from flock.events import register_event


class VerdictPayload(TypedDict):
    item_id: str
    target: str  # triage | output
    verdict: str  # approved | rejected | auto | timeout
    # Extensions (docs/REVIEW.md), present only when they say something.
    by: NotRequired[str]  # who answered, when it was not the API
    reason: NotRequired[str]
    edited: NotRequired[bool]
    attempt: NotRequired[int]  # when 2 or more


class VerdictOverruled(TypedDict):
    item_id: str
    target: str
    holders: list[str]
    by: str
    reason: NotRequired[str]
    attempt: NotRequired[int]


# "from" is a Python keyword, so this one is spelled in the functional form; its emit
# sites annotate a dict literal with it.
TrustChanged = TypedDict(
    "TrustChanged",
    {
        "holder": str,  # a crow's name or "flock"
        "task_type": str,
        "from": int,  # 0 stranger, 1 regular, 2 trusted
        "to": int,
        "by": NotRequired[str],  # on a reset or a seed from the admin
    },
)


class CooldownLifted(TypedDict):
    key: str  # the strike key, e.g. "requester:bob"
    requester: str
    strikes: int  # how many were cut short
    by: str


class CrowQuarantined(TypedDict):
    crow: str
    breach: str  # the breach's kind, or "owner_report"
    score: float
    evidence: str
    msg_id: str  # the offending message, or ""
    by: str


class CrowReinstated(TypedDict):
    crow: str
    by: str
    decision_id: str  # "" when reinstated directly


class BreachSummary(TypedDict):
    kind: str
    score: float
    msg_id: str


class DecisionRecord(TypedDict):
    """A decision as `GET /api/decisions/{id}` and `decision.opened` carry it."""

    decision_id: str
    kind: str
    subject: str
    crow: str
    question: str
    phrase: str
    options: list[str]
    recommendation: str
    recommended: str  # the option the recommendation names, or ""
    evidence: str
    breach: BreachSummary | None
    nest_id: str
    msg_id: str
    refers_to: str
    opened_at: str
    deadline: str
    status: str
    outcome: str
    answer: str
    answered_by: str
    closed_at: str | None


class DecisionClosed(TypedDict):
    decision_id: str
    kind: str
    subject: str
    crow: str
    status: str
    outcome: str  # reinstated | retired | kept | timeout, or the option picked
    answer: str
    by: str


register_event("verdict", VerdictPayload)
register_event("verdict.overruled", VerdictOverruled)
register_event("trust.changed", TrustChanged)
register_event("requester.cooldown_lifted", CooldownLifted)
register_event("crow.quarantined", CrowQuarantined)
register_event("crow.reinstated", CrowReinstated)
register_event("decision.opened", DecisionRecord)
register_event("decision.closed", DecisionClosed)
