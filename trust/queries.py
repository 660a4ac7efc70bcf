"""Reads of the trust app: levels are queries over the ledger."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q

from flock.events import rfc3339
from flock.personas import TASK_TYPES
from trust.models import LEVEL_NAMES, STRANGER, TRUSTED, Approval, TrustEntry

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
    only then (DECISIONS.md). No holders is not trusted: there is nothing to vouch for."""
    names = list(dict.fromkeys(holders))
    return bool(names) and all(trust_level(h, task_type) == TRUSTED for h in names)


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
            row = counts.get((holder, task_type), {})
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
            "task_type": a.task_type,
            "holders": a.holders,
            "deadline": rfc3339(a.deadline),
        }
        for a in Approval.objects.filter(verdict__isnull=True).order_by("deadline", "id")
    ]


def owner_output_verdicts() -> dict[str, bool]:
    """item_id -> approved? for every output the owner judged (auto verdicts and timeouts
    are left out: they say nothing about the quality of the work)."""
    from trust.models import Verdict

    rows = Verdict.objects.filter(
        target="output", verdict__in=(Verdict.Value.APPROVED, Verdict.Value.REJECTED)
    ).values_list("item_id", "verdict")
    return {item_id: verdict == Verdict.Value.APPROVED for item_id, verdict in rows}
