"""Reads of the expectation ledger, debates, memory and the orchestration log."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from flock.errors import BadInput, NotFound
from flock.models import Crow
from nests.actions.chat.debates import debate_record
from nests.actions.chat.expectations import expectation_record
from nests.actions.chat.orchestration import decision_record
from nests.models import Debate, Expectation, Nest, OrchestrationDecision
from nests.queries_memory import remember

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


def memory_of(name: str, *, query: str = "", limit: str | None = None) -> dict[str, Any]:
    """What a crow remembers across rooms (most relevant to `query` first, within its
    token budget), as the crow page and GET /api/crows/{name}/memory show it."""
    crow = Crow.objects.filter(name__iexact=name).first()
    if crow is None:
        raise NotFound(f"no such crow: {name!r}")
    size = 50
    if limit is not None:
        if not limit.isdigit() or not 1 <= int(limit) <= 200:
            raise BadInput("limit must be a whole number from 1 to 200")
        size = int(limit)
    if len(query) > 2000:
        raise BadInput("q must be at most 2000 characters")
    items = remember(crow.name, query=query, limit=size)
    return {"crow": crow.name, "query": query, "token_budget": settings.CROWS_MEMORY_TOKENS, "items": items}


def orchestration_log(
    *, crow: str | None = None, decider: str | None = None, kind: str | None = None, limit: str | None = None
) -> list[dict[str, Any]]:
    """Orchestration decisions, oldest first (the newest `limit`, default 200), filtered by
    the crow picked (or whose model was picked), the decider, or the kind."""
    rows = OrchestrationDecision.objects.all()
    if kind is not None:
        if kind not in OrchestrationDecision.Kind.values:
            raise BadInput(f"kind must be one of {', '.join(OrchestrationDecision.Kind.values)}, not {kind!r}")
        rows = rows.filter(kind=kind)
    if crow:
        rows = rows.filter(crow__iexact=crow)
    if decider:
        rows = rows.filter(decider__iexact=decider)
    size = 200
    if limit is not None:
        if not limit.isdigit() or not 1 <= int(limit) <= 1000:
            raise BadInput("limit must be a whole number from 1 to 1000")
        size = int(limit)
    return [decision_record(d) for d in reversed(list(rows.order_by("-id")[:size]))]
