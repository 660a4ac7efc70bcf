"""Reads of todo lists (the snapshot's open lists, one list's state for GET /api/lists/{id})."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from flock.events import rfc3339
from nests.models import Item, TodoList


def open_lists() -> list[dict[str, Any]]:
    """Lists still flying, oldest first, with how many of their items have ended."""
    rows = (
        TodoList.objects.filter(status=TodoList.Status.FLYING)
        .annotate(total=Count("items"), ended=Count("items", filter=Q(items__stage__in=Item.ENDED)))
        .order_by("id")
    )
    return [
        {
            "list_id": t.list_id,
            "requester": t.requester,
            "nest_id": t.nest_id,
            "items": t.total,
            "items_ended": t.ended,
            "tokens_used": t.tokens_used,
            "token_budget": t.token_budget,
            "started_at": rfc3339(t.created_at),
        }
        for t in rows
    ]


def list_state(list_id: str) -> dict[str, Any] | None:
    todo = TodoList.objects.filter(list_id=list_id).first()
    if todo is None:
        return None
    return {
        "list_id": todo.list_id,
        "requester": todo.requester,
        "nest_id": todo.nest_id,
        "status": todo.status,
        "tokens_used": todo.tokens_used,
        "token_budget": todo.token_budget,
        "started_at": rfc3339(todo.created_at),
        "finished_at": rfc3339(todo.finished_at) if todo.finished_at else None,
        "items": [
            {
                "item_id": i.item_id,
                "text": i.text,
                "stage": i.stage,
                "mode": i.mode,
                "task_type": i.task_type,
                "subtasks": i.subtasks,
                "reason": i.reason,
                "answer": i.answer,
                "crows": i.crows,
                "skip_reason": i.skip_reason,
                "tokens_used": i.tokens_used,
            }
            for i in todo.items.order_by("n")
        ],
    }
