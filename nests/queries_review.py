"""The owner's review queue (docs/REVIEW.md): everything waiting for the owner, as cards.

Every waiting approval (a list item's triage or output, a chat delivery) and every open
owner decision, oldest deadline first, each with what the owner needs to judge it: the
item's text, the Sentry's plan or the answer rendered, the crows, the deadline.
"""

from __future__ import annotations

from typing import Any

from flock.events import rfc3339
from flock.models import Flight
from nests.models import Item, NestMessage
from nests.render import render_markdown
from trust import queries as trust_queries
from trust.models import Approval

# The brain tasks whose text becomes an answer (not the Sentry's triage, not banter).
ANSWER_TASKS = ("answer", "subtask", "merge", "synthesise", "chat")


def mock_answered(item_ids: list[str]) -> set[str]:
    """Items (or messages) whose answer came, at least in part, from the offline mock brain."""
    if not item_ids:
        return set()
    by_item = set(
        Flight.objects.filter(item_id__in=item_ids, provider="mock", task__in=ANSWER_TASKS)
        .values_list("item_id", flat=True)
    )
    by_msg = set(
        Flight.objects.filter(msg_id__in=item_ids, provider="mock", task__in=ANSWER_TASKS)
        .values_list("msg_id", flat=True)
    )
    return by_item | by_msg


def _approval_card(a: Approval, items: dict[str, Item], messages: dict[str, NestMessage], mock: set[str]) -> dict:
    card: dict[str, Any] = {
        "key": f"approval:{a.item_id}:{a.target}",
        "kind": a.target,
        "item_id": a.item_id,
        "target": a.target,
        "list_id": a.list_id,
        "nest_id": a.nest_id,
        "deadline": rfc3339(a.deadline),
        "opened_at": rfc3339(a.opened_at),
        "attempt": a.attempt,
        "task_type": a.task_type,
        "holders": list(a.holders),
        "text": "",
        "plan": None,
        "answer": "",
        "answer_html": "",
        "crows": [],
        "owner_note": "",
        "mock": a.item_id in mock,
        "decision": None,
    }
    item = items.get(a.item_id)
    if item is not None:
        card["text"] = item.text
        card["owner_note"] = item.owner_note
        card["nest_id"] = card["nest_id"] or item.todo_list.nest_id
        if a.target == "triage":
            card["plan"] = {
                "mode": item.mode, "task_type": item.task_type, "subtasks": list(item.subtasks), "reason": item.reason,
            }
        else:
            card["answer"] = item.answer
            card["answer_html"] = render_markdown(item.answer)
            card["crows"] = list(item.crows)
        return card
    message = messages.get(a.item_id)
    if message is not None:
        card["kind"] = "delivery"
        request = messages.get(message.refers_to)
        card["text"] = request.text if request is not None else f"a request in #{a.nest_id}"
        card["answer"] = message.text
        card["answer_html"] = render_markdown(message.text)
        card["crows"] = [message.author]
    return card


def review_cards(*, list_id: str = "", nest_id: str = "") -> list[dict[str, Any]]:
    """Every waiting approval and open decision, oldest deadline first; `list_id` or
    `nest_id` narrows them to one list or one room (the inline cards of those pages)."""
    approvals = list(Approval.objects.filter(verdict__isnull=True).order_by("deadline", "id"))
    if list_id:
        approvals = [a for a in approvals if a.list_id == list_id]
    ids = [a.item_id for a in approvals]
    items = {i.item_id: i for i in Item.objects.filter(item_id__in=ids).select_related("todo_list")}
    delivery_ids = [i for i in ids if i not in items]
    messages = {m.msg_id: m for m in NestMessage.objects.filter(msg_id__in=delivery_ids)}
    refers = [m.refers_to for m in messages.values() if m.refers_to]
    messages.update({m.msg_id: m for m in NestMessage.objects.filter(msg_id__in=refers)})
    mock = mock_answered(ids)
    cards = [_approval_card(a, items, messages, mock) for a in approvals]
    if nest_id:
        cards = [c for c in cards if c["nest_id"] == nest_id]
    if not list_id:
        for d in trust_queries.open_decisions():
            if nest_id and d["nest_id"] != nest_id:
                continue
            cards.append({
                "key": f"decision:{d['decision_id']}",
                "kind": "decision",
                "item_id": d["decision_id"],
                "target": "",
                "list_id": "",
                "nest_id": d["nest_id"],
                "deadline": d["deadline"],
                "opened_at": d["opened_at"],
                "attempt": 1,
                "task_type": "",
                "holders": [d["crow"]] if d["crow"] else [],
                "text": d["question"],
                "plan": None,
                "answer": "",
                "answer_html": "",
                "crows": [d["crow"]] if d["crow"] else [],
                "owner_note": "",
                "mock": False,
                "decision": d,
            })
    cards.sort(key=lambda c: (c["deadline"], c["key"]))
    return cards
