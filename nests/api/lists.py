"""POST /api/lists (and a read of one list's state)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from flock.errors import NotFound
from flock.schemas import IdParam, errors
from flock.vocab import OWNER
from nests import queries_lists
from nests.actions import post_list
from nests.actions.lists import retry_item
from nests.schemas_lists import ListCreatedOut, ListIn, ListOut, RetryIn, RetryOut

router = Router(tags=["lists"])


@router.post("/lists", response={202: ListCreatedOut, **errors(404, 429, write=True)})
def create_list(request: HttpRequest, payload: ListIn) -> Status[dict[str, str]]:
    todo = post_list(payload.text, requester=payload.requester, nest_id=payload.nest_id)
    return Status(202, {"list_id": todo.list_id})


@router.get("/lists/{list_id}", response={200: ListOut, **errors(404)})
def read_list(request: HttpRequest, list_id: IdParam) -> dict[str, object]:
    state = queries_lists.list_state(list_id)
    if state is None:
        raise NotFound(f"no such list: {list_id[:40]!r}")
    return state


@router.post("/items/{item_id}/retry", response={202: RetryOut, **errors(404, 409, write=True)})
def retry(request: HttpRequest, item_id: IdParam, payload: RetryIn) -> Status[dict]:
    """Fly a rejected, timed-out or overruled item again with the owner's note."""
    item = retry_item(item_id, note=payload.note, by=OWNER)
    return Status(202, {"item_id": item.item_id, "list_id": item.todo_list.list_id, "attempt": item.attempt})
