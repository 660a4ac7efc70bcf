"""Banter: a generated aside between two crows of a list (docs/LISTS.md, docs/PERSONAS.md).

When a worker lands with an answer, and its list has spoken fewer than two lines, the
crow speaks one line to another crow of the list (one it has feelings about, if any). The
line comes from the brain, which is given both crows' backstories, the speaker's view of
the listener and the list's recent events. Banter never blocks work: it takes no flight
slot, runs in its own task, and a failed or empty line is dropped. Its tokens count
against the list budget (its estimate reserved while it is in the air, like a flight's),
never against an item's.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from flock.actions import record_flight
from flock.brains import BrainRequest, get_brain
from flock.events import emit, unwritten_events
from flock.models import Crow, Event
from nests.actions.lists import briefs, queue
from nests.actions.lists.ending import lock_list, maybe_finish
from nests.actions.lists.reservations import list_reserved
from nests.actions.lists.sorties import BANTER_PRIORITY
from nests.models import Banter, Item, Sortie, TodoList
from nests.payloads import CrowBanter

BANTER_PER_LIST = 2
LINE_MAX_CHARS = 300
RECENT_EVENTS = 6


def pick_listener(todo: TodoList, speaker: Crow) -> str:
    """Another crow of this list: a fellow worker before the Sentry or Elder, and one the
    speaker has feelings about (a relationship line) before one it has none about."""
    sorties = todo.sorties.exclude(crow=speaker.name).exclude(status=Sortie.Status.CANCELLED).order_by("-id")
    flown = list(sorties.values_list("crow", "role"))  # one read for both kinds
    workers = list(dict.fromkeys(crow for crow, role in flown if role == Sortie.Role.WORKER))
    others = list(dict.fromkeys(crow for crow, role in flown if role != Sortie.Role.WORKER))
    relations = speaker.relationships or {}
    candidates = [*workers, *others]
    for name in candidates:
        if name in relations:
            return name
    return candidates[0] if candidates else next(iter(relations), "Sentry")


def recent_events(todo: TodoList) -> list[dict[str, Any]]:
    # A landing's own events, still waiting in its batch, are the most recent.
    waiting = [(name, payload) for name, payload in unwritten_events(todo.list_id) if name != "crow.banter"]
    rows = (
        Event.objects.filter(list_key=todo.list_id)
        .exclude(name="crow.banter")
        .order_by("-id")
        .values_list("name", "payload")[:RECENT_EVENTS]
    )
    recent = [*reversed(list(rows)), *waiting][-RECENT_EVENTS:]
    return [{"event": name, "data": payload} for name, payload in recent]


def banter_request(todo: TodoList, *, speaker: Crow, listener: str) -> BrainRequest:
    other = Crow.objects.filter(name=listener).first()
    context: dict[str, Any] = {"listener": listener, "recent_events": recent_events(todo)}
    # The speaker's own backstory is in its persona; the listener's comes as extra system text.
    about = f"About {listener} ({other.epithet}): {other.backstory}" if other is not None else ""
    return briefs.brief(speaker, task="banter", context=context, system=about)


def maybe_start_banter(todo: TodoList, *, item: Item, speaker: Crow | str) -> Banter | None:
    """Start one line if the list has room for it (list locked by the caller). `speaker`
    is the crow, or its name (then read)."""
    if todo.banter_started >= BANTER_PER_LIST or todo.status != TodoList.Status.FLYING:
        return None
    speaking = speaker if isinstance(speaker, Crow) else Crow.objects.get(name=speaker)
    listener = pick_listener(todo, speaking)
    estimate = briefs.estimate(banter_request(todo, speaker=speaking, listener=listener))
    # Work first: banter never spends what a flight may need. Besides what is spent and
    # held, keep one answer's worth of tokens for every item still under way.
    still_working = todo.items.exclude(stage__in=Item.ENDED).count()
    headroom = still_working * briefs.MAX_TOKENS["answer"]
    if todo.tokens_used + list_reserved(todo) + estimate + headroom > todo.token_budget:
        return None
    # In the air with its estimate: that is its reservation on the list (reservations.py).
    todo.banter_started += 1
    todo.save(update_fields=["banter_started"])
    banter = Banter.objects.create(
        todo_list=todo, item_id=item.item_id, speaker=speaking.name, listener=listener, estimate=estimate
    )
    queue.speak_banter_task().using(priority=BANTER_PRIORITY).enqueue(banter.pk)
    return banter


def clean_line(text: str) -> str:
    """One usable line: the first non-empty one, whitespace collapsed, quotes trimmed."""
    for line in (text or "").splitlines():
        line = " ".join(line.split()).strip().strip('"“”').strip()
        if line:
            return line[:LINE_MAX_CHARS]
    return ""


def speak_banter(banter_pk: int) -> Banter:
    banter = Banter.objects.select_related("todo_list").get(pk=banter_pk)
    if banter.status != Banter.Status.FLYING:
        return banter
    speaker = Crow.objects.get(name=banter.speaker)
    request = banter_request(banter.todo_list, speaker=speaker, listener=banter.listener)
    reply = get_brain(speaker.brain_spec).think(request)
    line = clean_line(reply.text) if reply.ok else ""
    tokens = max(0, int(reply.tokens_in)) + max(0, int(reply.tokens_out))
    with transaction.atomic():
        todo = lock_list(banter.todo_list_id)
        banter = Banter.objects.select_for_update().get(pk=banter_pk)
        if banter.status != Banter.Status.FLYING:
            return banter
        record_flight(
            crow=banter.speaker, provider=reply.provider, model=reply.model, task="banter",
            ok=reply.ok, tokens_in=reply.tokens_in, tokens_out=reply.tokens_out,
            latency_ms=reply.latency_ms, error=reply.error, list_id=todo.list_id, item_id=banter.item_id,
        )
        banter.tokens = tokens
        banter.landed_at = timezone.now()
        if todo.status == TodoList.Status.FINISHED:
            # Too late: list.finished already reported the list's tokens, so they stay as
            # reported; the flight log keeps this call's real count.
            banter.status, banter.why_dropped = Banter.Status.DROPPED, "landed after list.finished"
        else:
            todo.tokens_used += tokens
            if line:
                banter.status, banter.text = Banter.Status.SPOKEN, line
                emit(
                    "crow.banter",
                    CrowBanter(item_id=banter.item_id, crow=banter.speaker, to=banter.listener, text=line),
                    list_id=todo.list_id,
                )
            else:
                banter.status = Banter.Status.DROPPED
                banter.why_dropped = (reply.error or "an empty or unusable line")[:200]
        banter.save(update_fields=["status", "text", "tokens", "landed_at", "why_dropped"])
        todo.save(update_fields=["tokens_used"])
        maybe_finish(todo)
    return banter


def drop_banter(banter_pk: int, *, why: str) -> Banter | None:
    """Drop a line still in the air (its task failed); the list need not wait for it."""
    with transaction.atomic():
        list_pk = Banter.objects.filter(pk=banter_pk).values_list("todo_list_id", flat=True).first()
        if list_pk is None:
            return None
        todo = lock_list(list_pk)
        banter = Banter.objects.select_for_update().get(pk=banter_pk)
        if banter.status != Banter.Status.FLYING:
            return banter
        banter.status, banter.why_dropped = Banter.Status.DROPPED, why[:200]
        banter.landed_at = timezone.now()
        banter.save(update_fields=["status", "why_dropped", "landed_at"])
        maybe_finish(todo)
    return banter
