from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from flock import queries as flock_queries
from flock.schemas import IdParam, errors
from flock.vocab import OWNER
from nests import actions, queries
from nests.actions.members import change_nest_members
from nests.schemas import NestIn, NestMembersIn, NestMembersOut, NestOut, NestsOut

router = Router(tags=["nests"])


@router.get("/nests", response={200: NestsOut, **errors()})
def list_nests(request: HttpRequest) -> dict[str, object]:
    living = set(flock_queries.living_crows().values_list("name", flat=True))
    return {
        "roster": flock_queries.roster_names(),
        "nests": [
            {"nest_id": n.nest_id, "name": n.name, "crows": queries.living_core(n, living)}
            for n in queries.nests_for_listing()
        ],
    }


@router.post("/nests", response={201: NestOut, **errors(409, write=True)})
def create_nest(request: HttpRequest, payload: NestIn) -> Status[dict[str, object]]:
    nest = actions.create_nest(payload.name, crows=payload.crows)
    return Status(201, {"nest_id": nest.nest_id, "name": nest.name, "crows": nest.core})


@router.post("/nests/{nest_id}/members", response={200: NestMembersOut, **errors(404, write=True)})
def change_members(request: HttpRequest, nest_id: IdParam, payload: NestMembersIn) -> dict[str, object]:
    nest, added, removed = change_nest_members(nest_id, add=payload.add, remove=payload.remove, by=OWNER)
    return {"nest_id": nest.nest_id, "crows": list(nest.core), "added": added, "removed": removed}
