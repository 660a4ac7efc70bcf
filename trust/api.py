"""The trust router: the ledger, the owner's verdicts and the owner's decisions."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Router, Status

from flock import queries as flock_queries
from flock.errors import BadInput, NotFound
from trust import actions, queries
from trust.schemas import DecisionAnswerIn, DecisionOut, VerdictIn

router = Router(tags=["trust"])


@router.get("/trust")
def trust_ledger(request: HttpRequest) -> dict[str, Any]:
    return queries.trust_ledger(c.name for c in flock_queries.living_crows())


@router.post("/verdicts", response={204: None})
def post_verdict(request: HttpRequest, payload: VerdictIn) -> Status[None]:
    if payload.overrule is not None and not isinstance(payload.overrule, bool):
        raise BadInput(f"overrule must be true or false, got {type(payload.overrule).__name__}")
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


@router.get("/decisions", response=list[DecisionOut])
def list_decisions(request: HttpRequest, status: Literal["open", "closed"] | None = None) -> list[dict[str, Any]]:
    return queries.decisions(status)


@router.get("/decisions/{decision_id}", response=DecisionOut)
def get_decision(request: HttpRequest, decision_id: str) -> dict[str, Any]:
    decision = queries.decision_named(decision_id)
    if decision is None:
        raise NotFound(f"no decision {decision_id!r}")
    return queries.decision_record(decision)


@router.post("/decisions/{decision_id}", response=DecisionOut)
def answer_decision(request: HttpRequest, decision_id: str, payload: DecisionAnswerIn) -> dict[str, Any]:
    decision = actions.answer_decision(decision_id, answer=payload.answer, by="owner")
    return queries.decision_record(decision)
