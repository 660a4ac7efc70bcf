"""Work that doesn't stall, read over HTTP (docs/GOVERNANCE.md): a room's expectations and
debates, a crow's memory across rooms, and the orchestration log."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from flock.schemas import IdParam, errors
from nests import queries_ledger
from nests.actions.messages import open_room
from nests.schemas_ledger import (
    DebatesOut,
    ExpectationsOut,
    ExpectationStatus,
    MemoryLimit,
    MemoryOut,
    MemoryQuery,
    OrchestrationKind,
    OrchestrationLimit,
    OrchestrationOut,
)

router = Router(tags=["ledger"])


@router.get("/nests/{nest_id}/expectations", response={200: ExpectationsOut, **errors(404)})
def list_expectations(request: HttpRequest, nest_id: IdParam, status: ExpectationStatus = None) -> dict[str, Any]:
    nest = open_room(nest_id)
    return {"nest_id": nest.nest_id, "expectations": queries_ledger.expectations_in(nest, status=status)}


@router.get("/nests/{nest_id}/debates", response={200: DebatesOut, **errors(404)})
def list_debates(request: HttpRequest, nest_id: IdParam) -> dict[str, Any]:
    nest = open_room(nest_id)
    return {"nest_id": nest.nest_id, "debates": queries_ledger.debates_in(nest)}


@router.get("/crows/{name}/memory", response={200: MemoryOut, **errors(404)})
def crow_memory(request: HttpRequest, name: IdParam, q: MemoryQuery = "", limit: MemoryLimit = None) -> dict[str, Any]:
    return queries_ledger.memory_of(name, query=q, limit=limit)


@router.get("/orchestration", response={200: OrchestrationOut, **errors()})
def orchestration(
    request: HttpRequest, crow: IdParam | None = None, decider: IdParam | None = None, kind: OrchestrationKind = None,
    limit: OrchestrationLimit = None,
) -> dict[str, Any]:
    return {"decisions": queries_ledger.orchestration_log(crow=crow, decider=decider, kind=kind, limit=limit)}
