from __future__ import annotations

from typing import Any

from ninja import Schema


class VerdictIn(Schema):
    # Loose types on purpose: the action names the exact problem in a 400 {"message"}
    # (a missing or non-bool `approve` must never be read as a no).
    item_id: Any = None
    target: Any = None
    approve: Any = None
    # Extensions (docs/REVIEW.md): the owner's reason, a corrected answer to approve, and
    # the owner rejecting an auto-approved answer after the fact.
    reason: Any = None
    edited_text: Any = None
    overrule: Any = None


class DecisionAnswerIn(Schema):
    """The owner's answer: the exact phrase, `retire`, an option, or anything else (a no)."""

    answer: str


class BreachOut(Schema):
    kind: str
    score: float
    msg_id: str


class DecisionOut(Schema):
    decision_id: str
    kind: str
    subject: str
    crow: str
    question: str
    phrase: str
    options: list[str]
    recommendation: str
    evidence: str
    breach: BreachOut | None
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
