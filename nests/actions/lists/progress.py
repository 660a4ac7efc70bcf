"""From an approved triage to an answer: the workers' flights, the Elder's merge or
synthesis, and `item.answered` with its output verdict.

Modes (docs/LISTS.md): solo is one crow; split gives each subtask to a different crow and
the Elder merges; murder sends 2-3 crows at the same task and the Elder synthesises. At
most CROWS_MAX_CROWS_PER_ITEM (3) worker crows fly one item; the Sentry and Elder serve
every item and do not count toward that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings

from flock.db import action_atomic
from flock.events import emit
from flock.models import Crow
from nests.actions.lists.crews import fit_subtasks, pick_crows
from nests.actions.lists.ending import FAILURE, mark_answered, skip_item
from nests.actions.lists.sorties import plan_sortie, plan_sorties
from nests.models import Item, Sortie
from nests.payloads import ItemAnswered
from trust.actions import auto_verdict_if_trusted, emit_auto_verdict, open_approval
from trust.models import Target

MURDER_CROWS = 3


def start_flights(item: Item, *, unsaved: Sequence[str] = ()) -> Item:
    """Plan the workers' sorties for a triaged, approved item (locked by the caller).
    `unsaved` names fields the caller set and leaves to this save."""
    with action_atomic():
        nest_id = item.todo_list.nest_id
        # The crew fits the item: typed for its task type first, then Jev's fit to its text.
        text, task_type = item.text, item.task_type
        if item.mode == "split":
            picks = pick_crows(nest_id, count=len(item.subtasks), text=text, task_type=task_type, parts=item.subtasks)
            # No crow able to fly leaves no parts to fly: the guard below skips the item.
            parts = fit_subtasks(list(item.subtasks), len(picks)) if picks else []
            plan = [(crow, borrowed, "subtask", part) for (crow, borrowed), part in zip(picks, parts, strict=True)]
        elif item.mode == "murder":
            picks = pick_crows(nest_id, count=min(MURDER_CROWS, settings.CROWS_MAX_CROWS_PER_ITEM), text=text, task_type=task_type)
            plan = [(crow, borrowed, "answer", "") for crow, borrowed in picks]
        else:
            picks = pick_crows(nest_id, count=1, text=text, task_type=task_type)
            plan = [(crow, borrowed, "answer", "") for crow, borrowed in picks]
        if not plan:
            if unsaved:
                item.save(update_fields=list(unsaved))
            return skip_item(item, reason=FAILURE)  # no crow is able to fly
        plan_sorties(item, [
            {"role": Sortie.Role.WORKER, "crow": crow, "borrowed": borrowed, "task": task, "subtask": part, "n": n}
            for n, (crow, borrowed, task, part) in enumerate(plan, start=1)
        ])
        item.stage = Item.Stage.FLYING
        item.save(update_fields=["stage", *unsaved])
    return item


def elder_name() -> str:
    return Crow.objects.filter(role=Crow.Role.ELDER).values_list("name", flat=True).first() or "Elder"


def after_worker_landed(item: Item, landed: Sortie | None = None) -> Item:
    """Once every worker of the item is down: answer (solo), call the Elder, or skip.
    `landed` is the worker that just landed. A solo item's is its only one (start_flights
    plans one), so its siblings are not read; a SQLite landing read whether any sibling
    is up or came back with an answer with its locks (flights._land_returning)."""
    current = landed is not None and landed.attempt == item.attempt
    several = item.mode in ("split", "murder")
    up = getattr(landed, "workers_up", None) if current and several else None
    if up is not None:
        assert landed is not None
        if up:
            return item
        answered = (landed.status == Sortie.Status.LANDED and bool(landed.ok)) or bool(getattr(landed, "workers_good", False))
    else:
        if current and not several:
            assert landed is not None
            workers = [landed]
        else:
            workers = list(item.sorties.filter(attempt=item.attempt, role=Sortie.Role.WORKER).order_by("n", "id"))
        if any(s.status not in (Sortie.Status.LANDED, Sortie.Status.CANCELLED) for s in workers):
            return item
        good = [s for s in workers if s.status == Sortie.Status.LANDED and s.ok]
        if good and not several:
            return answer_item(item, answer=good[0].text, crows=[good[0].crow])
        answered = bool(good)
    if not answered:
        return skip_item(item, reason=FAILURE)
    item.stage = Item.Stage.MERGING
    item.save(update_fields=["stage"])
    # A landing reads the Elder's name with its rows (flights._land_returning, _land_locking).
    elder = getattr(item, "elder_name", None) or elder_name()
    plan_sortie(item, role=Sortie.Role.ELDER, crow=elder, task="merge" if item.mode == "split" else "synthesise")
    return item


def after_elder_landed(item: Item, elder: Sortie, parts: Sequence[dict[str, Any]] | None = None) -> Item:
    """`parts` are the workers' answers the Elder was given (its request's, flights.
    request_for: the item's workers that landed with an answer, which no longer change
    once the Elder flies); read from the rows when not given."""
    if parts is not None:
        good = [Sortie(crow=p["crow"], text=p["text"], subtask=p.get("subtask", "")) for p in parts]
    else:
        good = list(
            item.sorties.filter(attempt=item.attempt, role=Sortie.Role.WORKER, status=Sortie.Status.LANDED, ok=True)
            .order_by("n", "id")
        )
    if elder.ok and elder.text.strip():
        return answer_item(item, answer=elder.text, crows=[*(s.crow for s in good), elder.crow])
    # The Elder failed: the answer is the parts that came back, unmerged, from the crows
    # that succeeded (the item still ends; a failed crow never hangs it).
    joined = "\n\n".join(f"{s.crow}{f' ({s.subtask})' if s.subtask else ''}:\n{s.text}" for s in good)
    return answer_item(item, answer=joined, crows=[s.crow for s in good])


def answer_item(item: Item, *, answer: str, crows: list[str]) -> Item:
    """Announce the answer; ask the owner unless every contributing crow is trusted."""
    with action_atomic():
        crows = list(dict.fromkeys(crows))
        list_id = item.todo_list.list_id
        verdict = auto_verdict_if_trusted(
            item.item_id, target=Target.OUTPUT, list_id=list_id, attempt=item.attempt,
            task_type=item.task_type, holders=crows,
        )
        needs_approval = verdict is None
        item.answer = answer
        item.crows = crows
        item.stage = Item.Stage.OUTPUT_REVIEW
        if needs_approval:
            item.save(update_fields=["answer", "crows", "stage"])
        emit(
            "item.answered",
            ItemAnswered(item_id=item.item_id, answer=answer, crows=crows, needs_approval=needs_approval),
            list_id=list_id,
        )
        if verdict is None:
            open_approval(
                item.item_id, target=Target.OUTPUT, list_id=list_id, task_type=item.task_type, holders=crows,
                attempt=item.attempt,
            )
        else:
            emit_auto_verdict(verdict)
            mark_answered(item, unsaved=["answer", "crows"])  # one UPDATE of the item
    return item
