"""The trust router: the ledger and the owner's verdicts."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from flock import queries as flock_queries
from flock.schemas import errors
from trust import actions, queries
from trust.schemas import TrustLedgerOut, VerdictIn

router = Router(tags=["trust"])


@router.get("/trust", response={200: TrustLedgerOut, **errors()})
def trust_ledger(request: HttpRequest) -> dict[str, object]:
    return queries.trust_ledger(c.name for c in flock_queries.living_crows())


@router.post("/verdicts", response={204: None, **errors(404, write=True)})
def post_verdict(request: HttpRequest, payload: VerdictIn) -> Status[None]:
    actions.record_owner_verdict(payload.item_id, target=payload.target, approve=payload.approve)
    return Status(204, None)
