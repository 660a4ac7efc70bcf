"""The events the nests app emits: each name registered with its payload's TypedDict, the
one statement of its fields (docs/API.md, "Events", describes them for readers). The
emitting action builds the TypedDict; `emit` adds `ts`, and `list_id`/`nest_id` when the
event is on that stream. The records (a message, an expectation, a debate, an
orchestration pick) are also what the API returns for them."""

# No `from __future__ import annotations`: TypedDict reads NotRequired from the real
# annotations, not from strings, to know which keys are optional.
from typing import Any, NotRequired, TypedDict

from flock.events import register_event

# --- lists: the pipeline's events, on the list's stream ------------------------------------


class ListItem(TypedDict):
    item_id: str
    text: str


class ListStarted(TypedDict):
    items: list[ListItem]
    requester: str
    nest_id: str


class ItemTriaged(TypedDict):
    item_id: str
    mode: str  # solo | split | murder
    task_type: str
    subtasks: list[str]
    reason: str
    needs_approval: bool


class CrowFlying(TypedDict):
    item_id: str
    crow: str
    borrowed: bool  # not in the nest's core


class CrowLanded(TypedDict):
    item_id: str
    crow: str
    ok: bool
    tokens: int
    error: NotRequired[str]  # when not ok


class ItemAnswered(TypedDict):
    item_id: str
    answer: str
    crows: list[str]
    needs_approval: bool


class ItemSkipped(TypedDict):
    item_id: str
    reason: str


class ItemRetried(TypedDict):
    item_id: str
    attempt: int
    note: str
    by: str
    previous: str  # the skip reason, or "overruled"
    reopened: bool  # the list had finished


class RequesterPranked(TypedDict):
    message: str
    cooldown_s: int


class ListFinished(TypedDict):
    tokens_used: int
    token_budget: int


class CrowBanter(TypedDict):
    item_id: str
    crow: str  # the speaker
    to: str  # the crow it is addressed to
    text: str


# --- rooms ---------------------------------------------------------------------------------


class MessageRecord(TypedDict):
    """A nest message as `nest.message` and the API carry it (docs/CHATROOM.md)."""

    msg_id: str
    kind: str
    author: str
    text: str
    to: str
    refers_to: str
    tagged_by: str  # jev | header | disagreement | default


class RoomMessage(MessageRecord):
    """A message as the API returns it (`POST /api/nests/{id}/messages`, a room's recent
    messages): its record and its room."""

    nest_id: str


class PagedMessage(RoomMessage):
    """A message on `GET /api/nests/{id}/messages`: the record, plus (an extension) a
    delivery's Markdown rendered and sanitised, "" for any other kind."""

    html: str


class NestCreated(TypedDict):
    nest_id: str
    name: str
    crows: list[str]
    created_by: str


class NestMembersChanged(TypedDict):
    nest_id: str
    crows: list[str]  # the new core
    added: list[str]
    removed: list[str]
    by: str


# --- the chat's ledgers: expectations, debates, orchestration (firehose, naming a room) ---


class ExpectationRecord(TypedDict):
    """An expectation as the API and its events carry it (docs/GOVERNANCE.md)."""

    expectation_id: str
    msg_id: str
    crow: str
    check: str
    expected: str
    request_msg_id: str
    debate_id: str
    status: str
    due_at: str
    due_from: str
    nudges: int
    nudge_limit: int
    nudge_msg_ids: list[str]
    scored: str
    confidence: float
    jev: dict[str, Any]
    outcome_msg_id: str
    summary_msg_id: str
    reason: str
    opened_at: str
    closed_at: str | None


class ExpectationOpened(ExpectationRecord):
    nest_id: str


class ExpectationClosed(ExpectationOpened):
    outcome: str  # met | missed | escalated


class DebateTurn(TypedDict):
    round: int
    crow: str
    stance: str
    msg_id: str
    text: str


class DebateRecord(TypedDict):
    """A debate as `GET /api/nests/{id}/debates` and `debate.started` carry it."""

    debate_id: str
    nest_id: str
    question: str
    moderator: str
    crows: list[str]
    stances: dict[str, str]
    judge: str
    rounds: int
    turn_order: bool
    round: int
    phase: str
    status: str
    cued: str
    turns: list[DebateTurn]
    finals: dict[str, str]
    verdict: str
    winner: str
    asked_msg_id: str
    kickoff_msg_id: str
    verdict_msg_id: str
    started_at: str
    finished_at: str | None


class DebateRound(TypedDict):
    nest_id: str
    debate_id: str
    round: int
    rounds: int
    status: str  # open | completed
    speakers: list[str]  # in order
    turns: list[DebateTurn]  # the round's turns, once completed


class DebateFinished(TypedDict):
    nest_id: str
    debate_id: str
    question: str
    rounds: int
    judge: str
    verdict: str
    winner: str
    finals: dict[str, str]
    verdict_msg_id: str
    turns: int  # how many
    status: str  # finished | stopped
    reason: NotRequired[str]  # why it stopped
    by: NotRequired[str]  # who stopped it


class OrchestrationRecord(TypedDict):
    """A scored crow or model pick as `GET /api/orchestration` and its event carry it."""

    decision_id: str
    kind: str
    decider: str
    crow: str
    model: str
    task: str
    task_type: str
    score: float
    band: str
    low_score: float
    factors: dict[str, Any]
    alternatives: dict[str, float]
    nest_id: str  # "" for a pick made outside a room
    msg_id: str
    nudge_msg_id: str
    created_at: str


register_event("list.started", ListStarted)
register_event("item.triaged", ItemTriaged)
register_event("crow.flying", CrowFlying)
register_event("crow.landed", CrowLanded)
register_event("item.answered", ItemAnswered)
register_event("item.skipped", ItemSkipped)
register_event("item.retried", ItemRetried)
register_event("requester.pranked", RequesterPranked)
register_event("list.finished", ListFinished)
register_event("crow.banter", CrowBanter)
register_event("nest.message", MessageRecord)
register_event("nest.created", NestCreated)
register_event("nest.members_changed", NestMembersChanged)
register_event("expectation.opened", ExpectationOpened)
register_event("expectation.closed", ExpectationClosed)
register_event("debate.started", DebateRecord)
register_event("debate.round", DebateRound)
register_event("debate.finished", DebateFinished)
register_event("orchestration.decided", OrchestrationRecord)
