"""Reads of the expectation ledger, debates, memory and the orchestration log: the records
the API and the events carry, and what the chat core's reactors and the invocation shell
read of them."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings

from flock.errors import BadInput, NotFound
from flock.events import rfc3339
from flock.models import Crow
from flock.vocab import HARNESS_AUTHORS, OWNER, MessageKind
from nests.models import (
    ChatRequest,
    Debate,
    Expectation,
    Invocation,
    Nest,
    NestMessage,
    OrchestrationDecision,
)
from nests.payloads import DebateRecord, ExpectationRecord, OrchestrationRecord
from nests.queries import request_for
from nests.queries_memory import remember

EXPECTATIONS_MAX = 200
DEBATE_RE = re.compile(
    r"\b(?:debate\s+(?:this|it|that|whether|if|about|on)|debate\s*:|have\s+(?:them|\w+\s+and\s+\w+)\s+(?:argue|debate)|"
    r"let\s+(?:them|\w+\s+and\s+\w+)\s+(?:argue|debate)|make\s+them\s+(?:argue|debate)|"
    r"(?:start|hold|run|open|want|have)\s+a\s+debate|a\s+debate\s+(?:between|on|about)|let'?s\s+debate|"
    r"(?:argue|debate)\s+it\s+out|(?:argue|debate)\s+(?:this|it)\s+out)\b",
    re.IGNORECASE,
)
STOP_RE = re.compile(
    r"\b(?:stop|end|cancel|halt|abort|kill|close|call\s+off)\s+(?:the\s+|this\s+|that\s+|our\s+|your\s+)?debate\b"
    r"|\bcall\s+(?:the\s+|this\s+|that\s+)?debate\s+off\b",
    re.IGNORECASE,
)
# Nudges per expectation before the owner gets the summary instead (docs/GOVERNANCE.md).
NUDGE_LIMIT = 3
FINAL_FORMAT = "Final position: <your stance> — <one line why>"
VERDICT_FORMAT = "Verdict: <crow> — <why>"


def expectations_in(nest: Nest, *, status: str | None = None) -> list[ExpectationRecord]:
    """The room's expectations, oldest first (the newest 200), optionally one status."""
    rows = Expectation.objects.filter(nest=nest).select_related("message", "request__message", "debate")
    if status is not None:
        if status not in Expectation.Status.values:
            raise BadInput(f"status must be one of {', '.join(Expectation.Status.values)}, not {status!r}")
        rows = rows.filter(status=status)
    newest = list(rows.order_by("-id")[:EXPECTATIONS_MAX])
    return [expectation_record(e) for e in reversed(newest)]


def debates_in(nest: Nest) -> list[DebateRecord]:
    """The room's debates, oldest first (the newest 50)."""
    newest = list(Debate.objects.filter(nest=nest).select_related("nest").order_by("-id")[:50])
    return [debate_record(d) for d in reversed(newest)]


def memory_of(name: str, *, query: str = "", limit: str | None = None) -> dict[str, Any]:
    """What a crow remembers across rooms (most relevant to `query` first, within its
    token budget), as the crow page and GET /api/crows/{name}/memory show it."""
    crow = Crow.objects.filter(name__iexact=name).first()
    if crow is None:
        raise NotFound(f"no such crow: {name!r}")
    size = 50
    if limit is not None:
        if not limit.isdigit() or not 1 <= int(limit) <= 200:
            raise BadInput("limit must be a whole number from 1 to 200")
        size = int(limit)
    if len(query) > 2000:
        raise BadInput("q must be at most 2000 characters")
    items = remember(crow.name, query=query, limit=size)
    return {"crow": crow.name, "query": query, "token_budget": settings.CROWS_MEMORY_TOKENS, "items": items}


def orchestration_log(
    *, crow: str | None = None, decider: str | None = None, kind: str | None = None, limit: str | None = None
) -> list[OrchestrationRecord]:
    """Orchestration decisions, oldest first (the newest `limit`, default 200), filtered by
    the crow picked (or whose model was picked), the decider, or the kind."""
    rows = OrchestrationDecision.objects.all()
    if kind is not None:
        if kind not in OrchestrationDecision.Kind.values:
            raise BadInput(f"kind must be one of {', '.join(OrchestrationDecision.Kind.values)}, not {kind!r}")
        rows = rows.filter(kind=kind)
    if crow:
        rows = rows.filter(crow__iexact=crow)
    if decider:
        rows = rows.filter(decider__iexact=decider)
    size = 200
    if limit is not None:
        if not limit.isdigit() or not 1 <= int(limit) <= 1000:
            raise BadInput("limit must be a whole number from 1 to 1000")
        size = int(limit)
    return [decision_record(d) for d in reversed(list(rows.order_by("-id")[:size]))]


# --- records --------------------------------------------------------------------------


def expectation_record(exp: Expectation) -> ExpectationRecord:
    """An expectation as the API and the events carry it (docs/GOVERNANCE.md)."""
    return {
        "expectation_id": exp.expectation_id,
        "msg_id": exp.message.msg_id,
        "crow": exp.crow,
        "check": exp.check_name,
        "expected": exp.expected,
        "request_msg_id": exp.request.message.msg_id if exp.request_id and exp.request else "",
        "debate_id": exp.debate.debate_id if exp.debate_id and exp.debate else "",
        "status": exp.status,
        "due_at": rfc3339(exp.due_at),
        "due_from": exp.due_from,
        "nudges": exp.nudges,
        "nudge_limit": NUDGE_LIMIT,
        "nudge_msg_ids": list(exp.nudge_msg_ids or []),
        "scored": exp.scored,
        "confidence": round(exp.confidence, 4),
        "jev": exp.jev or {},
        "outcome_msg_id": exp.outcome_msg_id,
        "summary_msg_id": exp.summary_msg_id,
        "reason": exp.reason,
        "opened_at": rfc3339(exp.opened_at),
        "closed_at": rfc3339(exp.closed_at) if exp.closed_at else None,
    }


def debate_record(debate: Debate) -> DebateRecord:
    return {
        "debate_id": debate.debate_id,
        "nest_id": debate.nest.nest_id,
        "question": debate.question,
        "moderator": debate.moderator,
        "crows": list(debate.crows),
        "stances": dict(debate.stances),
        "judge": debate.judge,
        "rounds": debate.rounds,
        "turn_order": debate.turn_order,
        "round": debate.round,
        "phase": debate.phase,
        "status": debate.status,
        "cued": debate.cued,
        "turns": list(debate.turns),
        "finals": dict(debate.finals),
        "verdict": debate.verdict,
        "winner": debate.winner,
        "asked_msg_id": debate.asked_msg_id,
        "kickoff_msg_id": debate.kickoff_msg_id,
        "verdict_msg_id": debate.verdict_msg_id,
        "started_at": rfc3339(debate.started_at),
        "finished_at": rfc3339(debate.finished_at) if debate.finished_at else None,
    }


def decision_record(d: OrchestrationDecision) -> OrchestrationRecord:
    return {
        "decision_id": d.decision_id,
        "kind": d.kind,
        "decider": d.decider,
        "crow": d.crow,
        "model": d.model,
        "task": d.task,
        "task_type": d.task_type,
        "score": round(d.score, 4),
        "band": d.band,
        "low_score": settings.CROWS_ORCHESTRATION_LOW_SCORE,
        "factors": d.factors,
        "alternatives": d.alternatives,
        "nest_id": d.nest_id,
        "msg_id": d.msg_id,
        "nudge_msg_id": d.nudge_msg_id,
        "created_at": rfc3339(d.created_at),
    }


# --- what the chat core reads -----------------------------------------------------------


def running_debate(nest: Nest, *, lock: bool = False) -> Debate | None:
    rows = Debate.objects.filter(nest=nest, status=Debate.Status.RUNNING)
    if lock:
        rows = rows.select_for_update()
    return rows.order_by("-id").first()


def cued_crow(message: NestMessage) -> str:
    """The crow a moderator's cue invokes, or "". A moderator is a crow (Boss), so the
    owner's and the harness's messages, most of a room's, skip the debate's lookup."""
    if message.author in (OWNER, *HARNESS_AUTHORS):
        return ""
    debate = running_debate(message.nest)
    if debate is None or message.author != debate.moderator or not debate.cued or debate.cue_msg_id:
        return ""
    return debate.cued


def context_for(nest: Nest, crow: str) -> dict[str, Any] | None:
    """What a crow cued in a running debate is told: the question, its stance, the phase
    and what the others said (for brains; the mock argues from it)."""
    debate = running_debate(nest)
    if debate is None or crow != debate.cued:
        return None
    phase = {"arguing": "argue", "final": "final", "judging": "judge"}.get(debate.phase, "argue")
    return {
        "debate_id": debate.debate_id,
        "question": debate.question,
        "phase": phase,
        "round": debate.round,
        "rounds": debate.rounds,
        "stance": debate.stances.get(crow, ""),
        "stances": dict(debate.stances),
        "judge": debate.judge,
        "turns": [{k: t[k] for k in ("round", "crow", "stance", "text")} for t in debate.turns],
        "finals": dict(debate.finals),
        "final_format": FINAL_FORMAT,
        "verdict_format": VERDICT_FORMAT,
    }


def nudged_expectation(message: NestMessage) -> Expectation | None:
    """The open expectation a harness nudge is about."""
    if message.kind != MessageKind.NUDGE or not message.refers_to:
        return None
    return (
        Expectation.objects.filter(
            nest=message.nest, message__msg_id=message.refers_to, crow=message.to, status__in=Expectation.LIVE
        )
        .select_related("request", "request__message")
        .order_by("-id")
        .first()
    )


def expect_for_nudge(message: NestMessage) -> str:
    """What a nudged crow is asked for: claim (a request), deliver (a claim or promise on
    a request), or say."""
    exp = nudged_expectation(message)
    if exp is None:
        return "say"
    if exp.check_name == Expectation.Check.REQUESTER_ANSWER:
        return "claim"
    if exp.request_id is not None and exp.check_name in (
        Expectation.Check.SINGLE_OWNER, Expectation.Check.PROMISE_KEPT, Expectation.Check.CLAIMS_SOURCED
    ):
        return "deliver"
    return "say"


def is_debate_order(text: str) -> bool:
    return bool(DEBATE_RE.search(text))


NEGATED_RE = re.compile(r"\b(?:don'?t|do\s+not|never|not|no\s+need\s+to)\s+(?:\w+\s+){0,2}$", re.IGNORECASE)


def is_stop_order(text: str) -> bool:
    """ "Stop the debate", not "don't stop the debate yet"."""
    m = STOP_RE.search(text)
    return m is not None and not NEGATED_RE.search(text[: m.start()].replace("’", "'"))


def answered(inv: Invocation) -> tuple[NestMessage, ChatRequest | None]:
    """The message the crow answers, and the request behind it if there is one: the
    claimed request for a deliver, the request itself for a lens or a re-dispatch."""
    trigger = inv.trigger
    request: ChatRequest | None
    if inv.reason == "claim_deliver":
        request = trigger.claim.request
    elif inv.reason in ("lens", "redispatch", "relay_back"):
        request = request_for(trigger.nest, trigger.refers_to)
    elif inv.reason == "nudge":
        # A nudge is about an expectation; the crow answers the work behind it.
        exp = nudged_expectation(trigger)
        request = exp.request if exp is not None else None
    else:
        request = ChatRequest.objects.filter(message=trigger).first()
    if request is not None and inv.reason != "relay_back":
        return request.message, request
    return trigger, request
