"""The Sentry's call on an item: mode, task type, subtasks and a reason for the owner.

Two opinions go into it. Jev, the fast local classifier, answers `task_type` (and `mode`
when that question is installed); the Sentry's brain answers the whole triage as JSON.
Jev's task type stands when it is sure (its high band); otherwise the brain's does. The
mode is the brain's, since only the brain can cut an item into subtasks, except that a
sure murder from Jev lifts a brain's solo (a judgment call needs no cutting); when the brain
fails, Jev's answers (or solo) keep the item moving and the reason says so.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from flock import jev as jev_service
from flock.actions import log_jev_tags
from flock.brains import BrainReply
from flock.db import action_atomic
from flock.events import emit
from flock.personas import TASK_TYPES
from nests.actions.lists.progress import fit_subtasks, start_flights
from nests.models import Item
from nests.payloads import ItemTriaged
from trust.actions import auto_verdict_if_trusted, emit_auto_verdict, open_approval
from trust.models import Target
from trust.queries import FLOCK_HOLDER

log = logging.getLogger("crows.lists")


MODES = ("solo", "split", "murder")
REASON_MAX_CHARS = 500
SUBTASK_MAX_CHARS = 2000
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass
class Triage:
    mode: str
    task_type: str
    subtasks: list[str] = field(default_factory=list)
    reason: str = ""


def ask_jev(text: str) -> dict[str, Any]:
    """Jev's answers on `task_type` and `mode`; a question Jev lacks (or a Jev failure) is
    simply absent, since the brain can triage alone."""
    answers: dict[str, Any] = {}
    for question in ("task_type", "mode"):
        try:
            answers[question] = jev_service.ask(question, text)
        except Exception as exc:
            log.debug("jev could not answer %s: %s", question, exc)
    return answers


def read_brain_triage(text: str) -> dict[str, Any] | None:
    """The brain's JSON triage, or None when it is not usable. Tolerates prose or a code
    fence around the object, as real models add them."""
    match = _JSON_OBJECT.search(text or "")
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or data.get("mode") not in MODES:
        return None
    subtasks = data.get("subtasks") or []
    if not isinstance(subtasks, list):
        subtasks = []
    data["subtasks"] = [str(s).strip()[:SUBTASK_MAX_CHARS] for s in subtasks if str(s).strip()]
    reason = data.get("reason")
    data["reason"] = " ".join(reason.split())[:REASON_MAX_CHARS] if isinstance(reason, str) else ""
    if data.get("task_type") not in TASK_TYPES:
        data["task_type"] = None
    return data


# The flying mode an owner's retry note names in so many words ("fly it solo", "a murder
# this time", "split it"): the owner's call, over the brain's and Jev's. "solo" is also
# "one crow" / "a single crow"; a note naming two modes names none.
_NOTE_MODES = {
    "solo": re.compile(r"\bsolo\b|\b(?:one|a single)\s+crow\b", re.IGNORECASE),
    "split": re.compile(r"\bsplit\b", re.IGNORECASE),
    "murder": re.compile(r"\bmurder\b|\bseveral\s+crows\b", re.IGNORECASE),
}


def mode_named_in(note: str) -> str | None:
    """The flying mode the owner's note asks for, or None."""
    named = [mode for mode, pattern in _NOTE_MODES.items() if pattern.search(note or "")]
    return named[0] if len(named) == 1 else None


def decide_triage(reply: BrainReply, jev: dict[str, Any], *, max_crows: int, owner_mode: str | None = None) -> Triage:
    triage = _decide(reply, jev, max_crows=max_crows)
    if owner_mode is None or owner_mode == triage.mode:
        return triage
    if owner_mode == "split" and len(triage.subtasks) < 2:
        brain = read_brain_triage(reply.text) if reply.ok else None
        parts = fit_subtasks(brain["subtasks"], max_crows) if brain and len(brain["subtasks"]) >= 2 else []
        if not parts:
            # Nothing to cut it into: it flies as triaged, and the reason says why.
            return Triage(mode=triage.mode, task_type=triage.task_type, subtasks=triage.subtasks,
                          reason=f"{triage.reason} (Your note asks to split it, but there are no parts to split it into.)")
        return Triage(mode="split", task_type=triage.task_type, subtasks=parts, reason=f"{triage.reason} Split, as your note asks.")
    return Triage(mode=owner_mode, task_type=triage.task_type, subtasks=[] if owner_mode != "split" else triage.subtasks,
                  reason=f"{triage.reason} Flown {owner_mode}, as your note asks.")


def _decide(reply: BrainReply, jev: dict[str, Any], *, max_crows: int) -> Triage:
    brain = read_brain_triage(reply.text) if reply.ok else None
    jev_type, jev_mode = jev.get("task_type"), jev.get("mode")

    if jev_type is not None and jev_type.band == "high" and jev_type.choice in TASK_TYPES:
        task_type = jev_type.choice
    elif brain and brain["task_type"]:
        task_type = brain["task_type"]
    elif jev_type is not None and jev_type.choice in TASK_TYPES:
        task_type = jev_type.choice
    else:
        task_type = "chat"

    if brain is not None:
        mode, subtasks, reason = brain["mode"], brain["subtasks"], brain["reason"]
        # A judgment call needs no cutting, so Jev may call it where the brain saw one job:
        # when Jev is sure an item wants several independent views, it gets them.
        if (
            mode == "solo"
            and jev_mode is not None
            and jev_mode.band == "high"
            and jev_mode.choice == "murder"
        ):
            mode = "murder"
            reason = f"{reason} Jev reads it as a judgment call, so several crows weigh in.".strip()
    else:
        # Without the brain there are no subtasks to split into.
        mode = jev_mode.choice if jev_mode is not None and jev_mode.choice in ("solo", "murder") else "solo"
        subtasks = []
        why = f"the Sentry's brain failed ({reply.error})" if not reply.ok else "the Sentry's reply was not a usable triage"
        reason = f"Triaged by Jev alone, since {why}: one {task_type} job, flown {mode}."
    if mode == "split" and len(subtasks) < 2:
        mode, subtasks = "solo", []
        reason = reason or f"One {task_type} job."
    if mode != "split":
        subtasks = []
    elif len(subtasks) > max_crows:
        subtasks = fit_subtasks(subtasks, max_crows)
        reason = f"{reason} (The last parts fly together: at most {max_crows} crows per item.)".strip()
    return Triage(mode=mode, task_type=task_type, subtasks=subtasks, reason=reason or f"One {task_type} job.")


def conclude_triage(item: Item, *, reply: BrainReply, jev: dict[str, Any]) -> Item:
    """Record the Sentry's call (item locked by the caller) and either ask the owner or,
    when the flock is trusted for this task type, record `auto` and start the flights."""
    from django.conf import settings

    with action_atomic():
        if jev:
            log_jev_tags(list(jev.values()), subject=item.item_id, text=item.text, with_events=True)
        triage = decide_triage(
            reply, jev, max_crows=settings.CROWS_MAX_CROWS_PER_ITEM, owner_mode=mode_named_in(item.owner_note),
        )
        item.mode, item.task_type = triage.mode, triage.task_type
        item.subtasks, item.reason = triage.subtasks, triage.reason
        list_id = item.todo_list.list_id
        verdict = auto_verdict_if_trusted(
            item.item_id, target=Target.TRIAGE, list_id=list_id, attempt=item.attempt,
            task_type=triage.task_type, holders=[FLOCK_HOLDER],
        )
        needs_approval = verdict is None
        item.stage = Item.Stage.TRIAGE_REVIEW
        triaged = ["mode", "task_type", "subtasks", "reason"]
        if needs_approval:
            item.save(update_fields=[*triaged, "stage"])
        emit(
            "item.triaged",
            ItemTriaged(
                item_id=item.item_id, mode=triage.mode, task_type=triage.task_type, subtasks=triage.subtasks,
                reason=triage.reason, needs_approval=needs_approval,
            ),
            list_id=list_id,
        )
        if verdict is None:
            open_approval(
                item.item_id, target=Target.TRIAGE, list_id=list_id, task_type=triage.task_type,
                holders=[FLOCK_HOLDER], attempt=item.attempt,
            )
        else:
            emit_auto_verdict(verdict)
            start_flights(item, unsaved=triaged)  # one UPDATE of the item
    return item
