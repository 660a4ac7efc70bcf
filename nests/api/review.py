"""GET /api/review: the owner's review queue; GET /api/flights: the flight log's rows."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from flock.events import rfc3339
from flock.models import Flight
from flock.schemas import IdParam, RowsLimit, errors
from nests import queries_review
from nests.schemas_review import FlightOut, ReviewOut

router = Router(tags=["review"])


@router.get("/review", response={200: ReviewOut, **errors()})
def review(request: HttpRequest, list_id: IdParam = "", nest_id: IdParam = "") -> dict:
    cards = queries_review.review_cards(list_id=list_id, nest_id=nest_id)
    return {"count": len(cards), "cards": cards}


@router.get("/flights", response={200: list[FlightOut], **errors()})
def flights(
    request: HttpRequest, item_id: IdParam = "", list_id: IdParam = "", crow: IdParam = "", limit: RowsLimit = 50
) -> list[dict]:
    """The flight log's rows, newest first, with the prompt each crow was given."""
    rows = Flight.objects.order_by("-id")
    if item_id:
        rows = rows.filter(item_id=item_id)
    if list_id:
        rows = rows.filter(list_id=list_id)
    if crow:
        rows = rows.filter(crow=crow)
    return [
        {
            "crow": f.crow, "provider": f.provider, "model": f.model, "task": f.task, "task_type": f.task_type,
            "list_id": f.list_id, "item_id": f.item_id, "nest_id": f.nest_id, "msg_id": f.msg_id,
            "tokens_in": f.tokens_in, "tokens_out": f.tokens_out, "latency_ms": round(f.latency_ms, 1),
            "ok": f.ok, "error": f.error, "prompt": f.prompt, "at": rfc3339(f.created_at),
        }
        for f in rows[:limit]
    ]
