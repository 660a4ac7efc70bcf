"""The nests router's schemas (docs/API.md). Request schemas are strict, refusing a wrong
type in the action's words (flock/schemas.py)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from ninja import Schema
from pydantic import ConfigDict, StrictStr, StringConstraints, WithJsonSchema

from flock.schemas import ID_MAX, NO_NUL_PATTERN, TEXT_PATTERN, StrictIn, WholeNumber, rule, says
from nests.actions.chat.budgets import TOP_UP_EXCHANGES_MAX, TOP_UP_TOKENS_MAX
from nests.actions.messages import CROW_KINDS, TEXT_MAX
from nests.actions.rooms import MAX_CORE, MIN_CORE, NAME_MAX, NAME_PATTERN
from nests.payloads import PagedMessage, RoomMessage
from nests.queries import PAGE_BEFORE_PATTERN, PAGE_MAX

# The messages page's query: read as text and judged by queries.parse_page, which names
# the problem; the document states the rule.
PageBefore = Annotated[
    Annotated[str, StringConstraints(max_length=ID_MAX)] | None,
    WithJsonSchema({
        "type": "string", "maxLength": ID_MAX, "pattern": PAGE_BEFORE_PATTERN,
        "description": "a message number or msg_id of this nest: the page ends just before it (404 for another room's)",
    }),
]
PageLimit = Annotated[
    str | None,
    WithJsonSchema({
        "type": "integer", "minimum": 1, "maximum": PAGE_MAX, "description": "messages per page (default 50)",
    }),
]


def at_least_one(**fields: str) -> ConfigDict:
    """A body that must carry at least one of `fields` (name -> JSON type), not null: the
    document says so with an anyOf of one required field each."""
    return ConfigDict(json_schema_extra={
        "additionalProperties": False,
        "anyOf": [
            {"type": "object", "required": [name], "properties": {name: {"type": kind}}} for name, kind in fields.items()
        ],
    })


class NestIn(StrictIn):
    REQUIRED: ClassVar[dict[str, str]] = {
        "name": "name must be a string",
        "crows": "crows must be a list of crow names",
    }
    name: Annotated[StrictStr, says("name must be a string")] = rule(
        "the nest's name, with a letter or digit of a-z, A-Z or 0-9; its id is the name slugified",
        minLength=1, maxLength=NAME_MAX, pattern=NAME_PATTERN,
    )
    crows: Annotated[list[StrictStr], says("crows must be a list of crow names")] = rule(
        "the core crows, names from the roster", minItems=MIN_CORE, maxItems=MAX_CORE, uniqueItems=True,
        items={"type": "string", "pattern": NO_NUL_PATTERN}
    )


class NestOut(Schema):
    nest_id: str
    name: str
    crows: list[str]


class NestsOut(Schema):
    roster: list[str]
    nests: list[NestOut]


class NestMembersIn(StrictIn):
    """A change of a nest's core: at least one of the two lists, crow names from the roster."""

    model_config = at_least_one(add="array", remove="array")

    add: Annotated[list[StrictStr] | None, says("add must be a list of crow names")] = rule(
        "crows to make core members, names from the roster", default=None, minItems=1, maxItems=MAX_CORE,
        uniqueItems=True, items={"type": "string", "pattern": NO_NUL_PATTERN},
    )
    remove: Annotated[list[StrictStr] | None, says("remove must be a list of crow names")] = rule(
        "core members to take out, names from the roster", default=None, minItems=1, maxItems=MAX_CORE,
        uniqueItems=True, items={"type": "string", "pattern": NO_NUL_PATTERN},
    )


class NestMembersOut(Schema):
    nest_id: str
    crows: list[str]
    added: list[str]
    removed: list[str]


class MessageIn(StrictIn):
    REQUIRED: ClassVar[dict[str, str]] = {
        "author": "author is required and must be a string",
        "text": "text is required and must be a string",
    }
    author: Annotated[StrictStr, says("author is required and must be a string")] = rule(
        "owner, or a member crow of the nest", minLength=1, pattern=TEXT_PATTERN, examples=["owner"]
    )
    text: Annotated[StrictStr, says("text is required and must be a string")] = rule(
        f"1–{TEXT_MAX} characters after trimming", minLength=1, maxLength=TEXT_MAX, pattern=TEXT_PATTERN
    )
    to: Annotated[StrictStr | None, says("to must be a string")] = rule(
        "owner or a member of the nest", default=None, pattern=NO_NUL_PATTERN
    )
    kind: Annotated[StrictStr | None, says("kind must be a string")] = rule(
        "the poster's own word on what it says; tagged by Jev when absent", default=None, enum=[*CROW_KINDS, None]
    )
    refers_to: Annotated[StrictStr | None, says("refers_to must be a string")] = rule(
        "the msg_id of an earlier message of this nest", default=None, pattern=NO_NUL_PATTERN
    )


# The record's TypedDict (its events' payload) is the schema: one statement of its fields.
MessageOut = RoomMessage


PagedMessageOut = PagedMessage


class MessagesPageOut(Schema):
    nest_id: str
    messages: list[PagedMessageOut]
    # The cursor of the next older page (pass it as ?before=), or null at the room's start.
    before: str | None


class BudgetIn(StrictIn):
    """A top-up adds something: at least one of the two is a whole number (a null is as
    good as absent, so the document asks for one that is not null, not just one field)."""

    model_config = at_least_one(exchanges="integer", tokens="integer")

    exchanges: Annotated[WholeNumber | None, says("exchanges must be a whole number")] = rule(
        "crow exchanges to add to this turn", default=None, minimum=1, maximum=TOP_UP_EXCHANGES_MAX
    )
    tokens: Annotated[WholeNumber | None, says("tokens must be a whole number")] = rule(
        "tokens to add to today", default=None, minimum=1, maximum=TOP_UP_TOKENS_MAX
    )


class BudgetOut(Schema):
    turn: int
    exchanges_per_turn: int
    exchanges_granted: int
    exchanges_left: int
    tokens_per_day: int
    tokens_topped_up: int
    tokens_used_today: int
    tokens_left_today: int


class ClaimOut(Schema):
    crow: str
    msg_id: str
    lens: str
    delivered: str


class RequestOut(Schema):
    msg_id: str
    requester: str
    addressed: str
    text: str
    mode: str
    task_type: str
    state: str
    relayed_to: str
    claims: list[ClaimOut]
    declined_by: list[str]


class InvocationOut(Schema):
    crow: str
    trigger: str
    reason: str
    expect: str
    fit: float | None
    candidates: dict[str, float]
    depth: int
    status: str
    reply: str
    tokens: int
    error: str
    at: str


class MemberOut(Schema):
    name: str
    role: str
    status: str


class NestDetailOut(Schema):
    nest_id: str
    name: str
    kind: str
    core: list[str]
    members: list[str]
    crows: list[MemberOut]
    budget: BudgetOut
    messages: list[MessageOut]
    requests: list[RequestOut]
    invocations: list[InvocationOut]
