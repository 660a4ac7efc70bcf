"""POST /api/lists (and a read of one list's state)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from flock.errors import NotFound
from flock.schemas import errors
from nests import queries_lists
from nests.actions import post_list
from nests.schemas_lists import ListCreatedOut, ListIn, ListOut

router = Router(tags=["lists"])


@router.post("/lists", response={202: ListCreatedOut, **errors(404, 429, write=True)})
def create_list(request: HttpRequest, payload: ListIn) -> Status[dict[str, str]]:
    todo = post_list(payload.text, requester=payload.requester, nest_id=payload.nest_id)
    return Status(202, {"list_id": todo.list_id})


@router.get("/lists/{list_id}", response={200: ListOut, **errors(404)})
def read_list(request: HttpRequest, list_id: str) -> dict[str, object]:
    state = queries_lists.list_state(list_id)
    if state is None:
        raise NotFound(f"no such list: {list_id[:40]!r}")
    return state
