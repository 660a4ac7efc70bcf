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
