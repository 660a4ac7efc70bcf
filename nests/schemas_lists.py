from __future__ import annotations

from typing import Any

from ninja import Schema


class ListIn(Schema):
    # Loose types on purpose: the action names the exact problem in a 400 {"message"}.
    text: Any = None
    requester: Any = None
    nest_id: Any = None


class ListCreatedOut(Schema):
    list_id: str


class ItemVerdictOut(Schema):
    target: str
    verdict: str
    attempt: int
    reason: str
    edited_text: str
    overruled: bool
    decided_at: str


class ListItemOut(Schema):
    item_id: str
    text: str
    stage: str
    mode: str
    task_type: str
    subtasks: list[str]
    reason: str
    answer: str
    crows: list[str]
    skip_reason: str
    tokens_used: int
    # Extensions (docs/REVIEW.md).
    attempt: int
    owner_note: str
    edited_text: str
    overruled: bool
    verdicts: list[ItemVerdictOut]
    answer_html: str
    edited_html: str
    mock: bool


class ListOut(Schema):
    list_id: str
    requester: str
    nest_id: str
    status: str
    tokens_used: int
    token_budget: int
    started_at: str
    finished_at: str | None
    items: list[ListItemOut]


class RetryIn(Schema):
    # Loose on purpose: retry_item names the exact problem in a 400.
    note: Any = None


class RetryOut(Schema):
    item_id: str
    list_id: str
    attempt: int
