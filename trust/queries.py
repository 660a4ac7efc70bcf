"""Reads of the trust app: levels are queries over the ledger."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Count, Max, Q

from flock.events import rfc3339
from flock.personas import TASK_TYPES
from trust.models import LEVEL_NAMES, STRANGER, TRUSTED, Approval, Breach, Decision, TrustEntry, Verdict
from trust.payloads import DecisionRecord

FLOCK_HOLDER = "flock"


def trust_balance(holder: str, task_type: str) -> tuple[int, int]:
    """(level, streak) of one holder for one task type; a stranger with no streak if new."""
    last = (
        TrustEntry.objects.filter(holder=holder, task_type=task_type)
        .order_by("-id")
        .values_list("level", "streak")
        .first()
    )
    return last if last is not None else (STRANGER, 0)


def trust_level(holder: str, task_type: str) -> int:
    return trust_balance(holder, task_type)[0]


def all_trusted(holders: Iterable[str], task_type: str) -> bool:
    """True only when every holder is trusted (2) for the task type; approval is skipped
    only then (docs/LISTS.md). No holders is not trusted: there is nothing to vouch for."""
    names = list(dict.fromkeys(holders))
    if len(names) < 2:
        return bool(names) and trust_level(names[0], task_type) == TRUSTED
    # Several holders (an answer's crows and the Elder): every newest entry in one read.
    newest = (
        TrustEntry.objects.filter(holder__in=names, task_type=task_type)
        .values("holder")
        .annotate(newest=Max("id"))
        .values("newest")
    )
    levels = dict(TrustEntry.objects.filter(id__in=newest).values_list("holder", "level"))
    return all(levels.get(name, STRANGER) == TRUSTED for name in names)


def trust_ledger(extra_holders: Iterable[str] = ()) -> dict[str, Any]:
    """GET /api/trust: every holder (the flock, the given crows, anyone in the ledger) by
    task type, with level, streak and the owner's approval and rejection counts."""
    from django.conf import settings

    counts = {
        (row["holder"], row["task_type"]): row
        for row in TrustEntry.objects.values("holder", "task_type").annotate(
            approvals=Count("id", filter=Q(outcome=TrustEntry.Outcome.APPROVED)),
            rejections=Count("id", filter=Q(outcome=TrustEntry.Outcome.REJECTED)),
        )
    }
    holders = list(dict.fromkeys([FLOCK_HOLDER, *extra_holders, *sorted({h for h, _ in counts})]))
    out: dict[str, dict[str, Any]] = {}
    for holder in holders:
        out[holder] = {}
        for task_type in TASK_TYPES:
            level, streak = trust_balance(holder, task_type) if (holder, task_type) in counts else (STRANGER, 0)
            row: Mapping[str, Any] = counts.get((holder, task_type), {})
            out[holder][task_type] = {
                "level": level,
                "level_name": LEVEL_NAMES[level],
                "streak": streak,
                "approvals": row.get("approvals", 0),
                "rejections": row.get("rejections", 0),
            }
    return {
        "levels": {str(k): v for k, v in LEVEL_NAMES.items()},
        "streak_to_promote": settings.CROWS_TRUST_STREAK,
        "task_types": list(TASK_TYPES),
        "holders": out,
    }


def trust_history(holder: str, *, limit: int = 50) -> list[dict[str, Any]]:
    """The newest ledger entries of one holder, newest first (for the UI)."""
    return [
        {
            "task_type": e.task_type,
            "outcome": e.outcome,
            "source": e.source,
            "from": e.level_before,
            "to": e.level,
            "streak": e.streak,
            "list_id": e.list_id,
            "item_id": e.item_id,
            "at": rfc3339(e.at),
        }
        for e in TrustEntry.objects.filter(holder=holder).order_by("-id")[:limit]
    ]


def pending_approvals() -> list[dict[str, Any]]:
    """Targets waiting for the owner, oldest deadline first (GET /api/state)."""
    return [
        {
            "item_id": a.item_id,
            "target": a.target,
            "list_id": a.list_id,
            "nest_id": a.nest_id,
            "task_type": a.task_type,
            "holders": a.holders,
            "deadline": rfc3339(a.deadline),
        }
        for a in Approval.objects.filter(verdict__isnull=True).order_by("deadline", "id")
    ]


def owner_verdicts(target: str = "output") -> dict[str, bool]:
    """item_id -> approved? for every output (or, with `target`, triage) the owner judged
    (auto verdicts and timeouts are left out: they say nothing about the quality of the
    work)."""
    rows = Verdict.objects.filter(
        target=target, verdict__in=(Verdict.Value.APPROVED, Verdict.Value.REJECTED)
    ).values_list("item_id", "verdict")
    return {item_id: verdict == Verdict.Value.APPROVED for item_id, verdict in rows}


# --- governance: decisions and the breach log -------------------------------------------


def decision_record(decision: Decision) -> DecisionRecord:
    """A decision as the API and `decision.opened` carry it (docs/GOVERNANCE.md)."""
    breach = decision.breach
    return {
        "decision_id": decision.decision_id,
        "kind": decision.kind,
        "subject": decision.subject,
        "crow": decision.crow,
        "question": decision.question,
        "phrase": decision.phrase,
        "options": list(decision.options or []),
        "recommendation": decision.recommendation,
        "recommended": recommended_option(decision),
        "evidence": decision.evidence,
        "breach": {"kind": breach.kind, "score": breach.score, "msg_id": breach.msg_id} if breach else None,
        "nest_id": decision.nest_id,
        "msg_id": decision.msg_id,
        "refers_to": decision.refers_to,
        "opened_at": rfc3339(decision.opened_at),
        "deadline": rfc3339(decision.deadline),
        "status": decision.status,
        "outcome": decision.outcome,
        "answer": decision.answer,
        "answered_by": decision.answered_by,
        "closed_at": rfc3339(decision.closed_at) if decision.closed_at else None,
    }


def decisions(status: str | None = None, *, limit: int = 200) -> list[DecisionRecord]:
    """Decisions, newest first; `status` open or closed narrows them."""
    rows = Decision.objects.select_related("breach").order_by("-id")
    if status:
        rows = rows.filter(status=status)
    return [decision_record(d) for d in rows[:limit]]


def open_decisions() -> list[DecisionRecord]:
    """Open decisions, oldest deadline first (GET /api/state)."""
    rows = Decision.objects.select_related("breach").filter(status=Decision.Status.OPEN).order_by("deadline", "id")
    return [decision_record(d) for d in rows]


def decision_named(decision_id: str) -> Decision | None:
    return Decision.objects.select_related("breach").filter(decision_id=decision_id).first()


def said_as(text: str) -> str:
    """How an owner's words are compared with a decision's phrase or options: trimmed,
    spaces collapsed, any case."""
    return " ".join(text.split()).casefold()


def option_letter(option: str) -> str:
    """"B" for a choice's option "B: Monday" ("" for an option without a letter)."""
    head, colon, _ = option.partition(":")
    return head.strip() if colon and len(head.strip()) == 1 else ""


def option_named(decision: Decision, answer: str) -> str | None:
    """The option of a choice `answer` names: its letter ("B"), its words ("Monday") or
    both ("B: Monday"), compared as said_as compares; None when it names none."""
    return _names_option(decision.options or [], said_as(answer))


def _names_option(options: list[str], said: str) -> str | None:
    for option in options:
        letter = option_letter(option)
        words = option.partition(":")[2] if letter else option
        if said in {said_as(option), said_as(words), said_as(letter) if letter else None}:
            return str(option)
    return None


def recommended_option(decision: Decision) -> str:
    """The option a choice's recommendation names by its letter ("B because …" -> the
    "B: …" option), or ""."""
    first = (decision.recommendation or "").split(maxsplit=1)
    if not first:
        return ""
    return next((str(o) for o in decision.options or [] if option_letter(o) == first[0]), "")


def open_decision_by_phrase(nest_id: str, text: str) -> Decision | None:
    """The open decision `text` answers: one whose exact phrase it is (trimmed, any case,
    spaces collapsed), the room's own first, then any other (a phrase names its subject,
    so saying it in another room means the same decision); else this room's open choice
    one of whose options it names (its letter, its words, or both), the newest first."""
    said = said_as(text)
    # Every owner message asks, and almost none answers: one query reads the phrases and
    # this room's choices' options, and loads the one decision that matches (docs/PERFORMANCE.md).
    answerable = (
        Decision.objects.filter(status=Decision.Status.OPEN)
        .filter(~Q(phrase="") | Q(kind=Decision.Kind.CHOICE, nest_id=nest_id))
        .order_by("id")
    )
    rows = list(answerable.values_list("pk", "phrase", "nest_id", "options"))
    matches = [(pk, room) for pk, phrase, room, _ in rows if phrase and said_as(phrase) == said]
    if matches:
        pk = next((pk for pk, room in matches if room == nest_id), matches[0][0])
        return Decision.objects.filter(pk=pk).first()
    for pk, phrase, room, options in reversed(rows):
        if not phrase and room == nest_id and _names_option(options or [], said):
            return Decision.objects.filter(pk=pk).first()
    return None


def open_decision_for_crow(crow: str) -> Decision | None:
    return (
        Decision.objects.filter(status=Decision.Status.OPEN, kind=Decision.Kind.QUARANTINE, crow=crow)
        .order_by("-id")
        .first()
    )


def breaches_of(crow: str, *, limit: int = 50) -> list[dict[str, Any]]:
    """A crow's breach log, newest first."""
    return [
        {
            "kind": b.kind,
            "score": b.score,
            "evidence": b.evidence,
            "nest_id": b.nest_id,
            "msg_id": b.msg_id,
            "subject": b.subject,
            "flagged": b.flagged,
            "at": rfc3339(b.at),
        }
        for b in Breach.objects.filter(crow=crow).order_by("-id")[:limit]
    ]
