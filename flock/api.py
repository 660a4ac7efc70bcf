from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from flock import queries
from flock.schemas import CrowOut, errors

router = Router(tags=["flock"])


@router.get("/crows", response={200: list[CrowOut], **errors()})
def list_crows(request: HttpRequest) -> list[CrowOut]:
    return [
        CrowOut(
            name=c.name,
            epithet=c.epithet,
            strength=c.strength,
            backstory=c.backstory,
            role=c.role,
            status=c.status,
            model=c.brain_spec,
            task_types=c.task_types,
        )
        for c in queries.living_crows()
    ]
