from __future__ import annotations

from ninja import Schema

from trust.schemas import DecisionOut


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
