"""GET /api/review: the owner's review queue; GET /api/flights: the flight log's rows."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from flock import queries as flock_queries
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
    return flock_queries.flight_log(item_id=item_id, list_id=list_id, crow=crow, limit=limit)
