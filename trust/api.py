"""The trust router: the ledger and the owner's verdicts."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from flock import queries as flock_queries
from trust import actions, queries
from trust.schemas import VerdictIn

router = Router(tags=["trust"])


@router.get("/trust")
def trust_ledger(request: HttpRequest) -> dict[str, Any]:
    return queries.trust_ledger(c.name for c in flock_queries.living_crows())


@router.post("/verdicts", response={204: None})
def post_verdict(request: HttpRequest, payload: VerdictIn) -> Status[None]:
    actions.record_owner_verdict(payload.item_id, target=payload.target, approve=payload.approve)
    return Status(204, None)
