"""The trust router's schemas (docs/API.md)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from ninja import Schema
from pydantic import ConfigDict, StrictBool, StrictStr, model_validator
from pydantic_core import PydanticCustomError

from flock.schemas import API_ERROR, ID_MAX, NO_NUL_PATTERN, TEXT_PATTERN, StrictIn, rule, says
from trust.actions.verdicts import EDITED_TEXT_MAX_CHARS, REASON_MAX_CHARS
from trust.payloads import BreachSummary, DecisionRecord

# The answer must be there unless the owner overrules (then it is a no by definition): a
# missing `approve` is refused, never read as a no.
VERDICT_REQUIRED = {
    "item_id": "item_id is required",
    "target": "target is required: triage or output",
    "approve": "approve is required: true or false",
}


def _as_the_contract_has_it(schema: dict[str, Any]) -> None:
    schema["additionalProperties"] = False
    schema["required"] = ["item_id", "target", "approve"]
    properties = schema["properties"]
    properties["target"] = {"type": "string", "enum": ["triage", "output"], "title": "Target"}
    properties["approve"] = {"type": "boolean", "title": "Approve"}
    properties["reason"] = {
        "anyOf": [{"type": "string", "maxLength": REASON_MAX_CHARS, "pattern": NO_NUL_PATTERN}, {"type": "null"}],
        "description": "why; kept with the verdict",
    }
    properties["edited_text"] = {
        "anyOf": [
            {"type": "string", "minLength": 1, "maxLength": EDITED_TEXT_MAX_CHARS, "pattern": TEXT_PATTERN},
            {"type": "null"},
        ],
        "description": "the owner's corrected answer, approved in place of the crow's (target output, approve true)",
    }
    properties["overrule"] = {
        "anyOf": [{"type": "boolean"}, {"type": "null"}],
        "description": "true rejects an auto-approved answer after the fact (target output, approve false)",
    }
    # How the extensions go together (docs/REVIEW.md): an edit is an approved answer, and an
    # overrule is the rejection of an answer that carries no edit.
    schema["allOf"] = [
        {
            "type": "object",
            "if": {"required": ["edited_text"], "properties": {"edited_text": {"type": "string"}}},
            "then": {"properties": {"target": {"const": "output"}, "approve": {"const": True}}},
        },
        {
            "type": "object",
            "if": {"required": ["overrule"], "properties": {"overrule": {"const": True}}},
            "then": {
                "properties": {
                    "target": {"const": "output"}, "approve": {"const": False}, "edited_text": {"type": "null"},
                }
            },
        },
    ]


class VerdictIn(StrictIn):
    """The owner's verdict. The document lists `target` and `approve` as required, as the
    contract has them; only an overrule (docs/REVIEW.md) may leave them out."""

    model_config = ConfigDict(json_schema_extra=lambda schema: _as_the_contract_has_it(schema))
    item_id: Annotated[StrictStr, says("item_id must be a non-empty string")] = rule(
        "the item (or chat delivery) waiting for the owner", minLength=1, maxLength=ID_MAX, pattern=TEXT_PATTERN
    )
    target: Annotated[Literal["triage", "output"] | None, says("target must be triage or output, got {value}")] = (
        rule("required unless `overrule` (then `output`)", default=None)
    )
    approve: Annotated[StrictBool | None, says("approve must be true or false, got {got}")] = rule(
        "required unless `overrule`", default=None
    )
    # Extensions (docs/REVIEW.md): the owner's reason, a corrected answer to approve, and
    # the owner rejecting an auto-approved answer after the fact.
    reason: Annotated[StrictStr | None, says("reason must be a string, got {got}")] = None
    edited_text: Annotated[StrictStr | None, says("edited_text must be a string, got {got}")] = None
    overrule: Annotated[StrictBool | None, says("overrule must be true or false, got {got}")] = None

    @model_validator(mode="before")
    @classmethod
    def _answer_required(cls, data: Any) -> Any:
        raw = getattr(data, "_obj", data)
        if isinstance(raw, dict):
            overruling = raw.get("overrule") is True
            for field, message in VERDICT_REQUIRED.items():
                if raw.get(field) is None and not (overruling and field != "item_id"):
                    raise PydanticCustomError(API_ERROR, message)
        return data


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
        "the exact phrase reinstates, `retire` retires, anything else keeps the quarantine; "
        "a choice takes an option's letter or words, anything else is a 400 naming the options",
        minLength=1, maxLength=300, pattern=TEXT_PATTERN,
    )


BreachOut = BreachSummary


# The record's TypedDict (its events' payload) is the schema: one statement of its fields.
DecisionOut = DecisionRecord


class ReinstateIn(StrictIn):
    """POST /api/crows/{name}/reinstate takes an empty JSON object: a state change is sent as
    JSON like every other (the owner gate's 415), and it needs nothing more."""
