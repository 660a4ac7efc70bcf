from __future__ import annotations

from typing import Any

from ninja import Schema


class NestIn(Schema):
    name: Any = None
    crows: Any = None


class NestOut(Schema):
    nest_id: str
    name: str
    crows: list[str]


class NestsOut(Schema):
    roster: list[str]
    nests: list[NestOut]


class MessageIn(Schema):
    # Loose types on purpose: the action names the exact problem in a 400 {"message"},
    # instead of a generic schema error.
    author: Any = None
    text: Any = None
    to: Any = None
    kind: Any = None
    refers_to: Any = None


class MessageOut(Schema):
    nest_id: str
    msg_id: str
    kind: str
    author: str
    text: str
    to: str
    refers_to: str
    tagged_by: str


class MessagesPageOut(Schema):
    nest_id: str
    messages: list[MessageOut]
    # The cursor of the next older page (pass it as ?before=), or null at the room's start.
    before: str | None


class BudgetIn(Schema):
    # Loose types: the action names the problem (a 400 {"message"}) itself.
    exchanges: Any = None
    tokens: Any = None


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
