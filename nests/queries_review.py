"""The owner's review queue (docs/REVIEW.md): everything waiting for the owner, as cards.

Every waiting approval (a list item's triage or output, a chat delivery) and every open
owner decision, oldest deadline first, each with what the owner needs to judge it: the
item's text, the Sentry's plan or the answer rendered, the crows, the deadline.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import F, Min, Q

from flock.events import rfc3339
from flock.models import Flight
from flock.vocab import OWNER, MessageKind
from nests.models import Invocation, Item, NestMessage, Sortie
from nests.queries import delivery_html
from nests.render import render_markdown
from trust import queries as trust_queries
from trust.models import Approval, Verdict

# The brain tasks whose text becomes an answer (not the Sentry's triage, not banter).
ANSWER_TASKS = ("answer", "subtask", "merge", "synthesise", "chat")


def mock_answered(item_ids: list[str]) -> set[str]:
    """Items (or messages) whose answer came, at least in part, from the offline mock brain.
    For a retried item only its current attempt counts: a mock's first answer does not
    make a real model's second one a placeholder."""
    if not item_ids:
        return set()
    # A flight is logged as its sortie lands, so the current attempt's flights are those
    # logged since its first take-off.
    attempt_began = dict(
        Sortie.objects.filter(item__item_id__in=item_ids, attempt=F("item__attempt"), started_at__isnull=False)
        .values("item__item_id")
        .annotate(began=Min("started_at"))
        .values_list("item__item_id", "began")
    )
    by_item = {
        item_id
        for item_id, logged in Flight.objects.filter(
            item_id__in=item_ids, provider="mock", task__in=ANSWER_TASKS
        ).values_list("item_id", "created_at")
        if item_id not in attempt_began or logged >= attempt_began[item_id]
    }
    by_msg = set(
        Flight.objects.filter(msg_id__in=item_ids, provider="mock", task__in=ANSWER_TASKS)
        .values_list("msg_id", flat=True)
    )
    return by_item | by_msg


class WritingFlight(NamedTuple):
    flight_id: int
    provider: str


def writing_flights(messages: list[NestMessage]) -> dict[str, WritingFlight]:
    """msg_id -> the chat flight whose text was posted as that crow message.

    A chat flight is logged under the message the crow answers, not under the reply it
    posts, so the reply is found through its invocation: the invocation's crow made a
    chat flight in that room, about the invocation's trigger or what the reply refers to,
    between the invocation's start and the reply. The newest such flight is the one whose
    text was posted. A message posted over the API, or built from the database (Quill's
    and Boss's answers), has no such flight."""
    by_id = {m.pk: m for m in messages}
    if not by_id:
        return {}
    posted = [
        (inv, by_id[inv.reply_id])
        for inv in Invocation.objects.filter(reply_id__in=list(by_id)).select_related("trigger__nest")
        if inv.reply_id is not None
    ]
    if not posted:
        return {}
    wanted = {inv.pk: {inv.trigger.msg_id, inv.trigger.refers_to, reply.refers_to} - {""} for inv, reply in posted}
    flights: dict[tuple[str, str, str], list[tuple[datetime, int, str]]] = {}
    rows = Flight.objects.filter(
        task="chat",
        crow__in={inv.crow for inv, _ in posted},
        msg_id__in={msg_id for ids in wanted.values() for msg_id in ids},
        created_at__gte=min(inv.created_at for inv, _ in posted),
    ).values_list("crow", "nest_id", "msg_id", "created_at", "id", "provider")
    for crow, nest_id, msg_id, at, flight_id, provider in rows:
        flights.setdefault((crow, nest_id, msg_id), []).append((at, flight_id, provider))
    out: dict[str, WritingFlight] = {}
    for inv, reply in posted:
        room = inv.trigger.nest.nest_id
        during = [
            flight for msg_id in wanted[inv.pk] for flight in flights.get((inv.crow, room, msg_id), [])
            if inv.created_at <= flight[0] <= reply.created_at
        ]
        if during:
            _, flight_id, provider = max(during)
            out[reply.msg_id] = WritingFlight(flight_id, provider)
    return out


def mock_written(messages: list[NestMessage]) -> set[str]:
    """Crow messages of a nest (claims, deliveries, talk) whose text the offline mock brain
    wrote: the chat flight that wrote them (writing_flights) says the provider."""
    return {msg_id for msg_id, flight in writing_flights(messages).items() if flight.provider == "mock"}


def chat_delivery_verdicts() -> dict[int, bool]:
    """flight id -> approved? for every chat delivery the owner judged, keyed by the chat
    flight that wrote it: the flight log's approval rate counts chat deliveries too."""
    judged = {
        item_id: verdict == Verdict.Value.APPROVED
        for item_id, verdict in Verdict.objects.filter(
            target="output", verdict__in=(Verdict.Value.APPROVED, Verdict.Value.REJECTED)
        ).exclude(nest_id="").values_list("item_id", "verdict")
    }
    if not judged:
        return {}
    deliveries = list(NestMessage.objects.filter(msg_id__in=list(judged), kind=MessageKind.DELIVER))
    return {flight.flight_id: judged[msg_id] for msg_id, flight in writing_flights(deliveries).items()}


# How many of a room's latest messages its page is told the mock wrote, like the Jev tags
# it starts with (nests/views.py): an older message replays without the badge.
MOCK_MESSAGES = 500


def mock_written_in(nest_id: str, *, limit: int = MOCK_MESSAGES) -> dict[str, Any]:
    """The nest page's starting answer: which of the room's latest messages the mock wrote,
    and the newest message number it looked at (the page asks about later ones itself)."""
    latest = list(NestMessage.objects.filter(nest__nest_id=nest_id).order_by("-n")[:limit])
    return {"msg_ids": sorted(mock_written(latest)), "through": latest[0].n if latest else 0}


def deliveries_rendered_in(nest_id: str, *, limit: int = MOCK_MESSAGES) -> dict[str, str]:
    """The nest page's starting answer: the room's latest deliveries and owner messages as
    rendered Markdown (a later one, the page reads from GET /api/nests/{nest_id}/messages)."""
    latest = NestMessage.objects.filter(
        Q(kind=MessageKind.DELIVER) | Q(author=OWNER), nest__nest_id=nest_id
    ).order_by("-n")[:limit]
    return {m.msg_id: delivery_html(m) for m in latest}


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
    # A list item's answer is flown under its item id; a chat delivery under the request
    # it answers, so the delivery is looked up through the invocation that posted it.
    mock = mock_answered(ids) | mock_written([m for m in messages.values() if m.msg_id in delivery_ids])
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
