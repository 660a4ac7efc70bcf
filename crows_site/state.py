"""GET /api/state: the protocol, the capabilities (every SSE event name this build emits)
and a small snapshot, after docs/API.md. Clients probe capabilities instead of
hard-coding them. It lives at the composition root because it reads every app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema
from pydantic import BaseModel, ConfigDict

from flock import queries as flock_queries
from flock.events import EVENT_NAMES, final_horizon
from flock.schemas import errors
from flock.stream.hub import hub

router = Router(tags=["state"])

PROTOCOL = "crows/1"

# Apps add parts of the snapshot ("open_lists", "pending_approvals", ...) here.
SNAPSHOT_PARTS: dict[str, Callable[[], Any]] = {}


def register_snapshot_part(name: str, read: Callable[[], Any]) -> None:
    SNAPSHOT_PARTS[name] = read


# The shapes of the parts the apps register (nests: open_lists, trust: pending_approvals).
# They are described here, not imported: the apps import this module while they load.
class OpenListOut(Schema):
    list_id: str
    requester: str
    nest_id: str
    items: int
    items_ended: int
    tokens_used: int
    token_budget: int
    started_at: str


class PendingApprovalOut(Schema):
    item_id: str
    target: str
    list_id: str
    task_type: str
    holders: list[str]
    deadline: str
    # The room of a chat delivery waiting for approval ("" for a list item).
    nest_id: str = ""


class FlockMemberOut(Schema):
    name: str
    epithet: str
    role: str
    status: str


class StateOut(BaseModel):
    # Apps may add parts (register_snapshot_part); they pass through as they are. A plain
    # pydantic model, since ninja's Schema reads a dict through an attribute getter that
    # drops the keys no field names.
    model_config = ConfigDict(extra="allow")

    protocol: str
    capabilities: list[str]
    last_event_id: int
    streams_open: int
    flock: list[FlockMemberOut]
    open_lists: list[OpenListOut] = []
    pending_approvals: list[PendingApprovalOut] = []


@router.get("/state", response={200: StateOut, **errors()})
def state(request: HttpRequest) -> dict[str, Any]:
    last = final_horizon()  # every id up to it is final: a safe cursor (docs/STREAM.md)
    snapshot: dict[str, Any] = {
        "protocol": PROTOCOL,
        "capabilities": sorted(EVENT_NAMES),
        "last_event_id": last,
        "streams_open": hub.count,
        "flock": [
            {"name": c.name, "epithet": c.epithet, "role": c.role, "status": c.status}
            for c in flock_queries.living_crows()
        ],
    }
    for name, read in SNAPSHOT_PARTS.items():
        snapshot[name] = read()
    return snapshot
