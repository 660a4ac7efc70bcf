"""GET /api/flightlog: the data for choosing models (docs/GOVERNANCE.md). At the composition
root because it joins the flight log (flock) with owner verdicts (trust) and the chat
deliveries they judged (nests)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from flock import queries as flock_queries
from flock.schemas import FlightlogOut, errors

router = Router(tags=["flock"])


def _owner_verdicts(target: str) -> dict[str, bool]:
    try:
        from trust.queries import owner_verdicts
    except ImportError:  # the verdict ledger is not part of this build
        return {}
    return owner_verdicts(target)


def _chat_delivery_verdicts() -> dict[int, bool]:
    try:
        from nests.queries_review import chat_delivery_verdicts
    except ImportError:  # no chatroom in this build
        return {}
    return chat_delivery_verdicts()


@router.get("/flightlog", response={200: FlightlogOut, **errors()})
def flightlog(request: HttpRequest) -> dict[str, Any]:
    # Triage calls are judged by the owner's triage verdicts, answers by output verdicts,
    # a chat flight by the verdict on the delivery it wrote.
    rows = flock_queries.flightlog_summary(
        approvals=_owner_verdicts("output"), triage_approvals=_owner_verdicts("triage"),
        chat_approvals=_chat_delivery_verdicts(),
    )
    return {"by_model_and_task_type": rows}
