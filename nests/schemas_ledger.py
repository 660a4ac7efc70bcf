"""Typed answers of the ledger endpoints: expectations, debates, memory, orchestration
(docs/GOVERNANCE.md)."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Schema
from pydantic import Field, StringConstraints, WithJsonSchema

from flock.schemas import NUL_FREE, QUERY_TEXT_MAX, says

# Query parameters, documented as the queries judge them (they give the precise 400). A
# limit must be ASCII digits before a query reads it: `²` passes str.isdigit but not int().

ExpectationStatus = Annotated[
    str | None, WithJsonSchema({"type": "string", "enum": ["open", "met", "missed", "escalated"]})
]
OrchestrationKind = Annotated[str | None, WithJsonSchema({"type": "string", "enum": ["crow", "model"]})]
MemoryLimit = Annotated[
    Annotated[str, StringConstraints(pattern=r"^[0-9]{1,4}$")] | None,
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 200, "description": "default 50"}),
    says("limit must be a whole number from 1 to 200, got {value}"),
]
OrchestrationLimit = Annotated[
    Annotated[str, StringConstraints(pattern=r"^[0-9]{1,4}$")] | None,
    WithJsonSchema({"type": "integer", "minimum": 1, "maximum": 1000, "description": "default 200"}),
    says("limit must be a whole number from 1 to 1000, got {value}"),
]
# Short enough that the request fits a request line fully percent-encoded (flock/schemas.py).
MemoryQuery = Annotated[
    str, Field(max_length=QUERY_TEXT_MAX, description="what to remember best", json_schema_extra={"pattern": NUL_FREE})
]


class ExpectationOut(Schema):
    expectation_id: str
    msg_id: str
    crow: str
    check: str
    expected: str
    request_msg_id: str
    debate_id: str
    status: str
    due_at: str
    due_from: str
    nudges: int
    nudge_limit: int
    nudge_msg_ids: list[str]
    scored: str
    confidence: float
    jev: dict[str, Any]
    outcome_msg_id: str
    summary_msg_id: str
    reason: str
    opened_at: str
    closed_at: str | None


class ExpectationsOut(Schema):
    nest_id: str
    expectations: list[ExpectationOut]


class DebateTurnOut(Schema):
    round: int
    crow: str
    stance: str
    msg_id: str
    text: str


class DebateOut(Schema):
    debate_id: str
    nest_id: str
    question: str
    moderator: str
    crows: list[str]
    stances: dict[str, str]
    judge: str
    rounds: int
    turn_order: bool
    round: int
    phase: str
    status: str
    cued: str
    turns: list[DebateTurnOut]
    finals: dict[str, str]
    verdict: str
    winner: str
    asked_msg_id: str
    kickoff_msg_id: str
    verdict_msg_id: str
    started_at: str
    finished_at: str | None


class DebatesOut(Schema):
    nest_id: str
    debates: list[DebateOut]


class MemoryItemOut(Schema):
    room: str
    room_name: str
    msg_id: str
    role: str
    author: str
    text: str
    at: str
    private: bool
    score: float


class MemoryOut(Schema):
    crow: str
    query: str
    token_budget: int
    items: list[MemoryItemOut]


class OrchestrationDecisionOut(Schema):
    decision_id: str
    kind: str
    decider: str
    crow: str
    model: str
    task: str
    task_type: str
    score: float
    band: str
    low_score: float
    factors: dict[str, Any]
    alternatives: dict[str, Any]
    nest_id: str
    msg_id: str
    nudge_msg_id: str
    created_at: str


class OrchestrationOut(Schema):
    decisions: list[OrchestrationDecisionOut]
