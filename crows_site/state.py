"""GET /api/state: the protocol, the capabilities (every SSE event name this build emits)
and a small snapshot, after WEBUI_PROTOCOL.md. Clients probe capabilities instead of
hard-coding them. It lives at the composition root because it reads every app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from ninja import Router

from flock import queries as flock_queries
from flock.events import EVENT_NAMES, final_horizon
from flock.stream.hub import hub

router = Router(tags=["state"])

PROTOCOL = "crows/1"

# Apps add parts of the snapshot ("open_lists", "pending_approvals", ...) here.
SNAPSHOT_PARTS: dict[str, Callable[[], Any]] = {}


def register_snapshot_part(name: str, read: Callable[[], Any]) -> None:
    SNAPSHOT_PARTS[name] = read


@router.get("/state")
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
