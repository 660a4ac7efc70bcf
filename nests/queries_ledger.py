"""Reads of the expectation ledger, debates, memory and the orchestration log."""

from __future__ import annotations

from typing import Any

from flock.errors import BadInput
from nests.actions.chat.expectations import expectation_record
from nests.actions.chat.debates import debate_record
from nests.models import Debate, Expectation, Nest

EXPECTATIONS_MAX = 200


def expectations_in(nest: Nest, *, status: str | None = None) -> list[dict[str, Any]]:
    """The room's expectations, oldest first (the newest 200), optionally one status."""
    rows = Expectation.objects.filter(nest=nest).select_related("message", "request__message", "debate")
    if status is not None:
        if status not in Expectation.Status.values:
            raise BadInput(f"status must be one of {', '.join(Expectation.Status.values)}, not {status!r}")
        rows = rows.filter(status=status)
    newest = list(rows.order_by("-id")[:EXPECTATIONS_MAX])
    return [expectation_record(e) for e in reversed(newest)]


def debates_in(nest: Nest) -> list[dict[str, Any]]:
    """The room's debates, oldest first (the newest 50)."""
    newest = list(Debate.objects.filter(nest=nest).select_related("nest").order_by("-id")[:50])
    return [debate_record(d) for d in reversed(newest)]
