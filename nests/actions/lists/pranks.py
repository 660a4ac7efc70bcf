"""`requester.pranked`: a requester who earns a strike hears of it on every list of theirs
still flying (docs/LISTS.md); with none flying, the 429 alone says it."""

from __future__ import annotations

from flock.events import emit
from nests.models import TodoList
from nests.payloads import RequesterPranked

_REQUESTER_PREFIX = "requester:"


def prank_flying_lists(key: str, message: str, cooldown_s: int) -> int:
    """The trust app's strike hook: runs inside the strike's transaction."""
    if not key.startswith(_REQUESTER_PREFIX):
        return 0
    requester = key.removeprefix(_REQUESTER_PREFIX)
    flying = TodoList.objects.filter(requester=requester, status=TodoList.Status.FLYING).order_by("id")
    count = 0
    for list_id in flying.values_list("list_id", flat=True):
        emit("requester.pranked", RequesterPranked(message=message, cooldown_s=cooldown_s), list_id=list_id)
        count += 1
    return count
