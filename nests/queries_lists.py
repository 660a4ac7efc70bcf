"""Reads of todo lists (the snapshot's open lists, one list's state for GET /api/lists/{id})."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from flock.events import rfc3339
from nests.models import Item, TodoList
from trust.models import Verdict


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


def item_verdicts(item_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every verdict of these items, all attempts, in the order they were given."""
    out: dict[str, list[dict[str, Any]]] = {i: [] for i in item_ids}
    for v in Verdict.objects.filter(item_id__in=item_ids).order_by("attempt", "id"):
        out[v.item_id].append({
            "target": v.target,
            "verdict": v.verdict,
            "attempt": v.attempt,
            "reason": v.reason,
            "edited_text": v.edited_text,
            "overruled": v.overruled_at is not None,
            "decided_at": rfc3339(v.decided_at),
        })
    return out


def _current_output(verdicts: list[dict[str, Any]], attempt: int) -> dict[str, Any]:
    for v in verdicts:
        if v["target"] == "output" and v["attempt"] == attempt:
            return v
    return {}


def list_state(list_id: str) -> dict[str, Any] | None:
    todo = TodoList.objects.filter(list_id=list_id).first()
    if todo is None:
        return None
    items = list(todo.items.order_by("n"))
    verdicts = item_verdicts([i.item_id for i in items])
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
                "attempt": i.attempt,
                "owner_note": i.owner_note,
                "edited_text": _current_output(verdicts[i.item_id], i.attempt).get("edited_text", ""),
                "overruled": bool(_current_output(verdicts[i.item_id], i.attempt).get("overruled")),
                "verdicts": verdicts[i.item_id],
            }
            for i in items
        ],
    }
