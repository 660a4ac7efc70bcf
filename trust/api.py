"""The trust router: the ledger, the owner's verdicts and the owner's decisions."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest
from ninja import Router, Status

from flock import queries as flock_queries
from flock.api import crow_out
from flock.errors import BadInput, NotFound
from flock.schemas import CrowOut, IdParam, errors
from flock.vocab import OWNER
from trust import actions, queries
from trust.payloads import DecisionRecord
from trust.schemas import DecisionAnswerIn, DecisionOut, ReinstateIn, TrustLedgerOut, VerdictIn

router = Router(tags=["trust"])


@router.get("/trust", response={200: TrustLedgerOut, **errors()})
def trust_ledger(request: HttpRequest) -> dict[str, object]:
    return queries.trust_ledger(c.name for c in flock_queries.living_crows())


@router.post("/verdicts", response={204: None, **errors(404, 409, write=True)})
def post_verdict(request: HttpRequest, payload: VerdictIn) -> Status[None]:
    if payload.overrule:
        if payload.approve is not None and payload.approve is not False:
            raise BadInput("an overrule is a rejection: send approve false, or leave it out")
        if payload.edited_text is not None:
            raise BadInput("an overrule carries no edited_text")
        actions.overrule_verdict(payload.item_id, target=payload.target or "output", reason=payload.reason)
        return Status(204, None)
    actions.record_owner_verdict(
        payload.item_id, target=payload.target, approve=payload.approve,
        reason=payload.reason, edited_text=payload.edited_text,
    )
    return Status(204, None)


@router.get("/decisions", response={200: list[DecisionOut], **errors()})
def list_decisions(request: HttpRequest, status: Literal["open", "closed"] | None = None) -> list[DecisionRecord]:
    return queries.decisions(status)


@router.get("/decisions/{decision_id}", response={200: DecisionOut, **errors(404)})
def get_decision(request: HttpRequest, decision_id: IdParam) -> DecisionRecord:
    decision = queries.decision_named(decision_id)
    if decision is None:
        raise NotFound(f"no decision {decision_id!r}")
    return queries.decision_record(decision)


@router.post("/decisions/{decision_id}", response={200: DecisionOut, **errors(404, 409, write=True)})
def answer_decision(request: HttpRequest, decision_id: IdParam, payload: DecisionAnswerIn) -> DecisionRecord:
    decision = actions.answer_decision(decision_id, answer=payload.answer, by=OWNER)
    return queries.decision_record(decision)


@router.post("/crows/{name}/reinstate", response={200: CrowOut, **errors(404, 409, write=True)})
def reinstate_crow(request: HttpRequest, name: IdParam, payload: ReinstateIn) -> CrowOut:
    """Lift a crow's quarantine now, with or without an open decision: the owner's own
    later yes after "Keep quarantined" or a decision that timed out (an extension,
    docs/GOVERNANCE.md). A decision still open about the crow closes as `reinstated`."""
    return crow_out(actions.reinstate_crow(name, by=OWNER))
