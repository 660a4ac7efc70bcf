from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from flock import queries as flock_queries
from nests import actions, queries
from nests.schemas import MessageIn, MessageOut, NestIn, NestOut, NestsOut

router = Router(tags=["nests"])



@router.get("/nests", response=NestsOut)
def list_nests(request: HttpRequest) -> dict:
    return {
        "roster": flock_queries.roster_names(),
        "nests": [
            {"nest_id": n.nest_id, "name": n.name, "crows": n.core} for n in queries.nests_for_listing()
        ],
    }


@router.post("/nests", response={201: NestOut})
def create_nest(request: HttpRequest, payload: NestIn) -> Status:
    nest = actions.create_nest(payload.name, crows=payload.crows)
    return Status(201, {"nest_id": nest.nest_id, "name": nest.name, "crows": nest.core})


@router.post("/nests/{nest_id}/messages", response={201: MessageOut})
def post_message(request: HttpRequest, nest_id: str, payload: MessageIn) -> Status:
    message = actions.post_message(
        nest_id,
        author=payload.author,
        text=payload.text,
        to=payload.to,
        kind=payload.kind,
        refers_to=payload.refers_to,
    )
    return Status(201, {"nest_id": message.nest.nest_id, **message.record()})
