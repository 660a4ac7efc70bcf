"""The trust router's schemas (docs/API.md)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from ninja import Schema
from pydantic import StrictBool, StrictStr

from flock.schemas import TEXT_PATTERN, StrictIn, rule, says


class VerdictIn(StrictIn):
    # A missing or non-boolean `approve` is refused, never read as a no.
    REQUIRED: ClassVar[dict[str, str]] = {
        "item_id": "item_id is required",
        "target": "target is required: triage or output",
        "approve": "approve is required: true or false",
    }
    item_id: Annotated[StrictStr, says("item_id must be a non-empty string")] = rule(
        "the item waiting for the owner", minLength=1, pattern=TEXT_PATTERN
    )
    target: Annotated[Literal["triage", "output"], says("target must be triage or output, got {value}")]
    approve: Annotated[StrictBool, says("approve must be true or false, got {got}")]


class TrustCellOut(Schema):
    level: int
    level_name: str
    streak: int
    approvals: int
    rejections: int


class TrustLedgerOut(Schema):
    levels: dict[str, str]
    streak_to_promote: int
    task_types: list[str]
    # holder -> task type -> standing
    holders: dict[str, dict[str, TrustCellOut]]


class DecisionAnswerIn(StrictIn):
    """The owner's answer: the exact phrase, `retire`, an option, or anything else (a no)."""

    REQUIRED: ClassVar[dict[str, str]] = {"answer": "answer is required: a non-empty string"}
    answer: Annotated[StrictStr, says("answer must be a string, got {got}")] = rule(
        "the exact phrase reinstates, `retire` retires, anything else keeps the quarantine",
        minLength=1, maxLength=300, pattern=TEXT_PATTERN,
    )


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
