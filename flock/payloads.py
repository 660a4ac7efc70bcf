"""The events the flock app emits: each name registered with its payload's TypedDict, the
one statement of its fields (docs/API.md, "Events", describes them for readers). The
emitting action builds the TypedDict; `emit` adds `ts`, and `list_id`/`nest_id` when the
event is on that stream."""

# No `from __future__ import annotations`: TypedDict reads NotRequired from the real
# annotations, not from strings, to know which keys are optional.
from typing import Any, NotRequired, TypedDict

from flock.events import register_event


class CrowHatched(TypedDict):
    crow: str
    epithet: str
    strength: str
    model: str
    task_types: list[str]
    trust: int  # always 0: a new crow starts a stranger
    hatched_by: str


class CrowRetired(TypedDict):
    crow: str
    retired_by: str
    reason: str


class CrowUpdated(TypedDict):
    crow: str
    by: str
    changes: dict[str, Any]  # each changed field's new value
    previous: dict[str, Any]  # each one's old value
    model: str  # the brain it flies with now


class StreamReset(TypedDict):
    """Sent to one client, never stored (flock/stream/retention.py): `pruned_through` for
    reason "retention", `newest_id` for reason "ahead"."""

    reason: str
    cursor: int
    pruned_through: NotRequired[int]
    newest_id: NotRequired[int]


register_event("crow.hatched", CrowHatched)
register_event("crow.retired", CrowRetired)
register_event("crow.updated", CrowUpdated)
STREAM_RESET = register_event("stream.reset", StreamReset)
