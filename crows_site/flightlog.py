"""GET /api/flightlog: the data for choosing models (docs/GOVERNANCE.md). At the composition
root because it joins the flight log (flock) with owner verdicts (trust) and the chat
deliveries they judged (nests)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from flock import queries as flock_queries
from flock.schemas import FlightlogOut, errors
from nests.queries_review import chat_delivery_verdicts
from trust.queries import owner_verdicts

router = Router(tags=["flock"])


@router.get("/flightlog", response={200: FlightlogOut, **errors()})
def flightlog(request: HttpRequest) -> dict[str, Any]:
    # Triage calls are judged by the owner's triage verdicts, answers by output verdicts,
    # a chat flight by the verdict on the delivery it wrote.
    rows = flock_queries.flightlog_summary(
        approvals=owner_verdicts("output"), triage_approvals=owner_verdicts("triage"),
        chat_approvals=chat_delivery_verdicts(),
    )
    return {"by_model_and_task_type": rows}
