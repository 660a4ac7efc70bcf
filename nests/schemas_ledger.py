"""Typed answers of the ledger endpoints: expectations, debates, memory, orchestration
(docs/GOVERNANCE.md)."""

from __future__ import annotations

from typing import Annotated

from ninja import Schema
from pydantic import Field, StringConstraints, WithJsonSchema

from flock.schemas import NUL_FREE, QUERY_TEXT_MAX, says
from nests.payloads import DebateRecord, DebateTurn, ExpectationRecord, OrchestrationRecord

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


# The record's TypedDict (its events' payload) is the schema: one statement of its fields.
ExpectationOut = ExpectationRecord


class ExpectationsOut(Schema):
    nest_id: str
    expectations: list[ExpectationOut]


DebateTurnOut = DebateTurn


# The record's TypedDict (its events' payload) is the schema: one statement of its fields.
DebateOut = DebateRecord


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


# The record's TypedDict (its events' payload) is the schema: one statement of its fields.
OrchestrationDecisionOut = OrchestrationRecord


class OrchestrationOut(Schema):
    decisions: list[OrchestrationDecisionOut]
