"""A room and its log: GET /api/nests/{nest_id}, GET and POST .../messages, and the
owner's budget top-up POST .../budget."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from flock.schemas import IdParam, errors
from nests import actions, queries
from nests.actions.chat.budgets import budget_view, top_up_budget
from nests.actions.messages import open_room
from nests.schemas import (
    BudgetIn,
    BudgetOut,
    MessageIn,
    MessageOut,
    MessagesPageOut,
    NestDetailOut,
    PageBefore,
    PageLimit,
)

router = Router(tags=["nests"])


@router.get("/nests/{nest_id}", response={200: NestDetailOut, **errors(404)})
def nest_detail(request: HttpRequest, nest_id: IdParam) -> dict[str, Any]:
    return queries.nest_detail(open_room(nest_id))


@router.get("/nests/{nest_id}/messages", response={200: MessagesPageOut, **errors(404)})
def list_messages(
    request: HttpRequest,
    nest_id: IdParam,
    before: PageBefore = None,
    limit: PageLimit = None,
) -> dict[str, Any]:
    nest = open_room(nest_id)
    cursor, size = queries.parse_page(nest, before=before, limit=limit)
    return queries.messages_page(nest, before=cursor, limit=size)


@router.post("/nests/{nest_id}/messages", response={201: MessageOut, **errors(404, 409, 429, write=True)})
def post_message(request: HttpRequest, nest_id: IdParam, payload: MessageIn) -> Status[dict[str, Any]]:
    message = actions.post_message(
        nest_id,
        author=payload.author,
        text=payload.text,
        to=payload.to,
        kind=payload.kind,
        refers_to=payload.refers_to,
    )
    return Status(201, queries.message_record(message))


@router.post("/nests/{nest_id}/budget", response={200: BudgetOut, **errors(404, write=True)})
def top_up(request: HttpRequest, nest_id: IdParam, payload: BudgetIn) -> dict[str, Any]:
    budget = top_up_budget(open_room(nest_id), exchanges=payload.exchanges, tokens=payload.tokens)
    return budget_view(budget)
