from __future__ import annotations

from typing import Annotated

from ninja import Schema
from pydantic import Field

from flock.schemas import says
from trust.schemas import DecisionOut

FLIGHTS_MAX = 200

# GET /api/flights?limit=: out of range is a 400 naming it, not quietly clamped.
FlightsLimit = Annotated[
    int,
    Field(ge=1, le=FLIGHTS_MAX, description="rows, newest first (default 50)"),
    says(f"limit must be a whole number from 1 to {FLIGHTS_MAX}, got {{value}}"),
]


class PlanOut(Schema):
    mode: str
    task_type: str
    subtasks: list[str]
    reason: str


class ReviewCardOut(Schema):
    key: str
    kind: str  # triage | output | delivery | decision
    item_id: str
    target: str
    list_id: str
    nest_id: str
    deadline: str
    opened_at: str
    attempt: int
    task_type: str
    holders: list[str]
    text: str
    plan: PlanOut | None
    answer: str
    answer_html: str
    crows: list[str]
    owner_note: str
    mock: bool
    decision: DecisionOut | None


class ReviewOut(Schema):
    count: int
    cards: list[ReviewCardOut]


class FlightOut(Schema):
    crow: str
    provider: str
    model: str
    task: str
    task_type: str
    list_id: str
    item_id: str
    nest_id: str
    msg_id: str
    tokens_in: int
    tokens_out: int
    latency_ms: float
    ok: bool
    error: str
    prompt: str
    at: str
