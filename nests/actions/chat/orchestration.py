"""Orchestration scores (docs/GOVERNANCE.md): Jev validates the picks
Quill and Boss make, so nobody picks a crow or a model on vibes.

- A **crow pick**: a request Quill or Boss addresses to a crow (over the API, from a
  brain, Quill routing or relaying an owner's request), and every pick dispatch makes by
  fit (decider `dispatch`). Score: the picked crow's fit for the request (Jev's
  `fit_score` of the request against its profile, lifted for its task types, weighted by
  its trust for the task type and its recent results: dispatch's formula) relative to the
  best-fitting crow in the room, in [0, 1]; 1 when it is the best, or when Jev sees no
  difference at all.
- A **model pick**: Boss hatching a crow on a model. Score, from the flight log for that
  model and the crow's task type: 0.45 owner approval rate (0.5 with no verdicts) + 0.2
  speed (1 / (1 + p50 latency / 2 s)) + 0.15 cost (1 / (1 + tokens per call / 1,500),
  free for the offline mock) + 0.2 reliability (1 - failure rate).

Every decision is an `OrchestrationDecision` row and an `orchestration.decided` event. A
score below CROWS_ORCHESTRATION_LOW_SCORE goes back to the decider (Quill or Boss) as a
nudge `[NUDGE <msg_id>] [nudge 1/3] ...` to reconsider, which invokes it; the crow decides.
Dispatch's own picks are the best fit by construction and nudge nobody.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.utils import timezone

from flock.db import action_atomic
from flock.events import emit
from flock.models import Crow, Flight
from flock.queries import flightlog_summary
from flock.vocab import HARNESS, OWNER, MessageKind
from nests import crow_fit, queries
from nests.actions.chat.effects import NOTHING, Effects, Posted, Say
from nests.actions.chat.ledger import (
    close_expectation,
    due_period,
    nudge_line,
    nudge_refusal,
    open_expectation,
)
from nests.models import Expectation, Nest, NestMessage, OrchestrationDecision
from nests.queries_ledger import decision_record
from nests.queries_review import chat_delivery_verdicts
from trust.queries import owner_verdicts

log = logging.getLogger("crows.orchestration")

PICKERS = (Crow.Role.ASSISTANT, Crow.Role.CHIEF_OF_STAFF)
DISPATCH = "dispatch"
OUTPUT_TASKS = ("answer", "subtask", "merge", "synthesise", "chat")


def _log(**fields: Any) -> OrchestrationDecision:
    low = fields["score"] < settings.CROWS_ORCHESTRATION_LOW_SCORE
    d = OrchestrationDecision.objects.create(decision_id="new", band="low" if low else "ok", **fields)
    d.decision_id = f"orch-{d.pk}"
    d.save(update_fields=["decision_id"])
    return d


def _emit(d: OrchestrationDecision) -> None:
    # On the firehose, naming its room: a room's own stream carries its messages.
    emit("orchestration.decided", decision_record(d))


def _nudge(d: OrchestrationDecision, text: str, *, nest: Nest) -> Effects:
    """The decider nudged to reconsider (which invokes it); the nudge's id is kept on the
    decision once said. A decider that cannot be nudged (quarantined, retired, out of the
    room) is never skipped in silence: see `_undeliverable`."""
    refusal = nudge_refusal(d.decider, nest)
    if refusal:
        return _undeliverable(d, nest=nest, refusal=refusal)

    def noted(nudge: NestMessage) -> None:
        d.nudge_msg_id = nudge.msg_id
        d.save(update_fields=["nudge_msg_id"])

    deadline = timezone.now() + due_period()
    return Effects(say=[Say(
        author=HARNESS, text=nudge_line(d.msg_id, 1, deadline, text), kind=MessageKind.NUDGE,
        to=d.decider, refers_to=d.msg_id, nest=nest, then=noted,
    )])


def _undeliverable(d: OrchestrationDecision, *, nest: Nest, refusal: str) -> Effects:
    """A nudge that cannot be delivered, handled as the expectation ledger handles one
    (nests.actions.chat.timers): one harness line tells the owner in the room, and the
    expectation the nudge stood for (the decider owes an answer on its pick) is recorded
    on the pick's message and closed `escalated` to the owner, with the reason."""
    why = f"{refusal}: Jev's nudge on {d.decision_id} was not delivered"
    pick = f"the model {d.model} for @{d.crow}" if d.kind == OrchestrationDecision.Kind.MODEL else f"@{d.crow}"

    def recorded(said: NestMessage) -> None:
        on = NestMessage.objects.filter(nest=nest, msg_id=d.msg_id).first() or said
        exp = open_expectation(
            on, crow=d.decider, check=Expectation.Check.REQUESTER_ANSWER,
            expected=f"reconsider the pick {d.decision_id} Jev scored low ({d.score:.2f})",
        )
        exp.summary_msg_id = said.msg_id
        close_expectation(exp, status=Expectation.Status.ESCALATED, by_msg_id=said.msg_id, reason=why)

    return Effects(say=[Say(
        author=HARNESS, to=OWNER, refers_to=d.msg_id, nest=nest, then=recorded,
        text=(
            f"@{OWNER}, {why}: it asked @{d.decider} to reconsider {pick}, scored {d.score:.2f}, below the low "
            f"band {settings.CROWS_ORCHESTRATION_LOW_SCORE:.2f}. The pick stands unless you change it."
        ),
    )])


# --- crow picks ----------------------------------------------------------------------------


def _fit_of(crow: Crow, task: str, task_type: str) -> tuple[float, dict[str, Any]]:
    fit = crow_fit.typed_fit(task, crow, task_type)
    level = queries.trust_level(crow.name, task_type)
    recent = queries.recent_success(crow.name)
    total = crow_fit.weighted(fit, level, recent)
    return total, {"fit": round(fit, 4), "trust_level": level, "recent": round(recent, 4), "weighted": round(total, 6)}


def score_crow_pick(
    message: NestMessage, *, decider: str, crow: str, task: str, task_type: str, nudge: bool = True
) -> Effects:
    """Score a pick of `crow` for the request `message` and log it; the nudge to the
    decider when it is low is returned. Call inside the posting transaction."""
    nest = message.nest
    members = set(queries.crow_members(nest))
    picked = Crow.objects.filter(name=crow).first()
    if picked is None:
        return NOTHING
    weighted: dict[str, float] = {}
    factors: dict[str, Any] = {}
    candidates: list[Crow] = []
    for candidate in queries.worker_crows():
        if candidate.name not in members or candidate.status != Crow.Status.ACTIVE:
            continue
        candidates.append(candidate)
        total, parts = _fit_of(candidate, task, task_type)
        weighted[candidate.name] = round(total, 6)
        if candidate.name == crow:
            factors = parts
    if crow not in weighted:
        candidates.append(picked)
        total, factors = _fit_of(picked, task, task_type)
        weighted[crow] = round(total, 6)
    # The best is whom dispatch would pick (nests.crow_fit: typed for the task type first),
    # so a pick of that crow scores 1 even where an untyped crow weighs more.
    best = crow_fit.best_first(candidates, task_type, weighted)[0]
    score = 1.0 if weighted[best] <= 0 or crow == best else min(1.0, weighted[crow] / weighted[best])
    factors = {**factors, "best": best, "best_weighted": weighted[best]}
    d = _log(
        kind=OrchestrationDecision.Kind.CROW, decider=decider, crow=crow, task=task[:500], task_type=task_type,
        score=round(score, 4), factors=factors, alternatives=weighted, nest_id=nest.nest_id, msg_id=message.msg_id,
    )
    _emit(d)
    if nudge and d.band == "low" and decider != DISPATCH:
        return _nudge(
            d,
            f"@{decider}, Jev scored your pick of @{crow} for this {task_type} request at {d.score:.2f}, below the "
            f"low band {settings.CROWS_ORCHESTRATION_LOW_SCORE:.2f}: {best} fits better "
            f"({weighted[best]:.3f} against {weighted[crow]:.3f}). Reconsider: re-address it, or keep your pick and say why.",
            nest=nest,
        )
    return NOTHING


def react(posted: Posted) -> Effects:
    """A request Quill or Boss opened addressed to a crow is a crow pick: scored, and the
    picker nudged when it is low."""
    message, request = posted.message, posted.request
    opened = request is not None and request.message_id == message.id
    if message.kind != MessageKind.REQUEST or not opened or not message.to or message.to == OWNER:
        return NOTHING
    author = Crow.objects.filter(name=message.author).first()
    if author is None or author.role not in PICKERS:
        return NOTHING
    target = Crow.objects.filter(name=message.to).first()
    if target is None or target.role in PICKERS:
        return NOTHING
    assert request is not None
    return score_crow_pick(message, decider=author.name, crow=target.name, task=message.text, task_type=request.task_type)


def log_dispatch_pick(message: NestMessage, *, crow: str, reason: str, candidates: dict[str, float], task_type: str) -> None:
    """Dispatch's fit pick, logged with the scores it weighed (never nudged)."""
    best = max(candidates.values()) if candidates else 0.0
    score = 1.0 if best <= 0 else candidates.get(crow, 0.0) / best
    d = _log(
        kind=OrchestrationDecision.Kind.CROW, decider=DISPATCH, crow=crow, task=message.text[:500], task_type=task_type,
        score=round(score, 4), factors={"reason": reason, "weighted": candidates.get(crow, 0.0)},
        alternatives=candidates, nest_id=message.nest.nest_id, msg_id=message.msg_id,
    )
    _emit(d)


# --- model picks ---------------------------------------------------------------------------


def model_stats(model_spec: str, task_type: str) -> dict[str, Any]:
    """The flight log's numbers for one model and task type (any task type when none)."""
    provider, _, model = model_spec.partition(":")
    model = model or provider
    summary = flightlog_summary(approvals=owner_verdicts(), chat_approvals=chat_delivery_verdicts())
    rows = [r for r in summary if r["provider"] == provider and r["model"] == model]
    typed = [r for r in rows if r["task_type"] == task_type] or rows
    calls = sum(r["calls"] for r in typed)
    verdicts = sum(r["owner_verdicts"] for r in typed)
    approved = sum((r["approval_rate"] or 0) * r["owner_verdicts"] for r in typed)
    return {
        "calls": calls,
        "owner_verdicts": verdicts,
        "approval_rate": round(approved / verdicts, 4) if verdicts else None,
        "latency_p50_ms": max((r["latency_p50_ms"] for r in typed), default=None),
        "tokens_per_call": round(sum(r["tokens_in"] + r["tokens_out"] for r in typed) / calls, 1) if calls else None,
        "failure_rate": round(sum(r["failure_rate"] * r["calls"] for r in typed) / calls, 4) if calls else None,
    }


def model_score(model_spec: str, task_type: str) -> tuple[float, dict[str, Any]]:
    stats = model_stats(model_spec, task_type)
    approval = stats["approval_rate"] if stats["approval_rate"] is not None else 0.5
    speed = 1 / (1 + stats["latency_p50_ms"] / 2000) if stats["latency_p50_ms"] is not None else 0.5
    if model_spec.split(":", 1)[0] in ("mock", "script"):
        cost = 1.0
    elif stats["tokens_per_call"] is not None:
        cost = 1 / (1 + stats["tokens_per_call"] / 1500)
    else:
        cost = 0.5
    reliability = 1 - stats["failure_rate"] if stats["failure_rate"] is not None else 0.75
    score = 0.45 * approval + 0.2 * speed + 0.15 * cost + 0.2 * reliability
    return round(score, 4), {
        **stats, "approval": round(approval, 4), "speed": round(speed, 4), "cost": round(cost, 4),
        "reliability": round(reliability, 4),
    }


# Set while Boss moves a crow to another model: Boss scores the pick itself, with the room
# and the message that asked for it, and says the score in its reply.
_scored_by_boss: ContextVar[bool] = ContextVar("scored_by_boss", default=False)


@contextmanager
def boss_scores_the_pick() -> Iterator[None]:
    token = _scored_by_boss.set(True)
    try:
        yield
    finally:
        _scored_by_boss.reset(token)


def score_owner_model_change(crow: Crow, *, previous: dict[str, Any], by: str) -> None:
    """The owner moved a crow to another model (the settings page, PATCH /api/crows/{name},
    the admin): Jev scores the pick and logs it, as for Boss's picks. The owner is told the
    score on the page and in GET /api/orchestration; an owner is never nudged."""
    if "model" not in previous or _scored_by_boss.get():
        return
    score_model_pick(crow, model_spec=crow.brain_spec, decider=by or OWNER, nudge=False)  # an owner is never nudged


def score_model_pick(
    crow: Crow, *, model_spec: str, decider: str, nest: Nest | None = None, msg_id: str = "", nudge: bool = True
) -> tuple[OrchestrationDecision, Effects]:
    """Score the model a crow runs on (hatching, or a change) and log it; the nudge to the
    decider when it is low is returned for the caller to apply."""
    task_type = (crow.task_types or ["chat"])[0]
    score, factors = model_score(model_spec, task_type)
    alternatives: dict[str, float] = {}
    for provider, model in Flight.objects.values_list("provider", "model").distinct()[:20]:
        spec = f"{provider}:{model}" if provider not in ("mock",) else provider
        if spec != model_spec:
            alternatives[spec] = model_score(spec, task_type)[0]
    # Its own transaction when called alone; its caller's when nested (Boss's hatch and
    # model change score in the transaction that made the change).
    with action_atomic():
        d = _log(
            kind=OrchestrationDecision.Kind.MODEL, decider=decider, crow=crow.name, model=model_spec,
            task=f"{crow.name}: {crow.strength}"[:500], task_type=task_type, score=score, factors=factors,
            alternatives=alternatives, nest_id=nest.nest_id if nest is not None else "", msg_id=msg_id,
        )
        _emit(d)
        if nudge and d.band == "low" and nest is not None and msg_id and decider != OWNER:
            better = max(alternatives, key=lambda k: alternatives[k]) if alternatives else ""
            hint = f" {better} scores {alternatives[better]:.2f}." if better and alternatives[better] > score else ""
            return d, _nudge(
                d,
                f"@{decider}, Jev scored {model_spec} for {crow.name} ({task_type}) at {score:.2f}, below the low band "
                f"{settings.CROWS_ORCHESTRATION_LOW_SCORE:.2f}, from the flight log.{hint} Reconsider the model, or keep it and say why.",
                nest=nest,
            )
    return d, NOTHING
