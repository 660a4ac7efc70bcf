from __future__ import annotations

from typing import Annotated, ClassVar

from ninja import Schema
from pydantic import StrictStr

from flock.schemas import NO_NUL_PATTERN, TEXT_PATTERN, StrictIn, rule, says
from nests.actions.lists.intake import ITEM_MAX_CHARS, ITEMS_MAX, REQUESTER_MAX_CHARS


class ListIn(StrictIn):
    REQUIRED: ClassVar[dict[str, str]] = {
        "text": "text is required: the todo list, one item per line",
        "requester": "requester is required",
    }
    text: Annotated[StrictStr, says("text must be a string, got {got}")] = rule(
        "the todo list, one item per line (bullets and checkboxes are taken off); at most 20 "
        f"items of at most {ITEM_MAX_CHARS} characters",
        minLength=1,
        maxLength=ITEMS_MAX * (ITEM_MAX_CHARS + 1),
        pattern=TEXT_PATTERN,
    )
    requester: Annotated[StrictStr, says("requester must be a string, got {got}")] = rule(
        "who asks (a self-asserted label)", minLength=1, maxLength=REQUESTER_MAX_CHARS, pattern=TEXT_PATTERN
    )
    nest_id: Annotated[StrictStr | None, says("nest_id must be a string, got {got}")] = rule(
        "the nest the list belongs to; todo when absent", default=None, pattern=NO_NUL_PATTERN
    )


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


class FlightFailureOut(Schema):
    """A failed flight of the item's current attempt: the crow, and the brain's sentence."""

    crow: str
    error: str


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
    failures: list[FlightFailureOut]


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


class RetryIn(StrictIn):
    note: Annotated[StrictStr | None, says("note must be a string, got {got}")] = rule(
        "the owner's note, put into every crew prompt of the new attempt", default=None, maxLength=2000,
        pattern=NO_NUL_PATTERN,
    )


class RetryOut(Schema):
    item_id: str
    list_id: str
    attempt: int
