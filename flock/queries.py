"""Reads of the flock app."""

from __future__ import annotations

from django.db.models import Model, QuerySet

from flock.brains import Persona
from flock.events import rfc3339
from flock.models import Crow, Flight, JevTag


def living_crows() -> QuerySet[Crow]:
    """Every crow that is not retired, in hatch order."""
    return Crow.objects.exclude(status=Crow.Status.RETIRED).order_by("id")


def roster_names() -> list[str]:
    """The crows that can be core members of a nest (not Sentry or Elder, not retired)."""
    return list(living_crows().filter(in_roster=True).values_list("name", flat=True))


def crow_named(name: str) -> Crow | None:
    return Crow.objects.filter(name=name).first()


def _newest_first[M: Model](model: type[M], **given: str) -> QuerySet[M]:
    """A log's rows newest first, narrowed by each filter given (an empty one is no filter)."""
    return model._default_manager.filter(**{field: value for field, value in given.items() if value}).order_by("-id")


def jev_tags(*, subject: str = "", question: str = "", limit: int = 50) -> list[dict]:
    """Jev's tag log, newest first, as GET /api/jev/tags shows it."""
    return [
        {
            "question": t.question, "subject": t.subject, "text": t.text, "choice": t.choice, "band": t.band,
            "probs": t.probs, "source": t.source, "local_choice": t.local_choice or t.choice, "outcome": t.outcome,
            "impl": t.impl, "version": t.version, "latency_ms": round(t.latency_ms, 2), "at": rfc3339(t.created_at),
        }
        for t in _newest_first(JevTag, subject=subject, question=question)[:limit]
    ]


def flight_log(*, item_id: str = "", list_id: str = "", crow: str = "", limit: int = 50) -> list[dict]:
    """The flight log, newest first, with the prompt each crow was given, as GET
    /api/flights shows it."""
    return [
        {
            "crow": f.crow, "provider": f.provider, "model": f.model, "task": f.task, "task_type": f.task_type,
            "list_id": f.list_id, "item_id": f.item_id, "nest_id": f.nest_id, "msg_id": f.msg_id,
            "tokens_in": f.tokens_in, "tokens_out": f.tokens_out, "latency_ms": round(f.latency_ms, 1),
            "ok": f.ok, "error": f.error, "prompt": f.prompt, "at": rfc3339(f.created_at),
        }
        for f in _newest_first(Flight, item_id=item_id, list_id=list_id, crow=crow)[:limit]
    ]


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return round(ordered[rank], 2)


# The brain tasks whose text is the item's answer (or a part of it), and so are judged by
# the owner's output verdict. Triage is judged by its own verdict; banter never is.
OUTPUT_TASKS = frozenset({"answer", "subtask", "merge", "synthesise", "synthesize"})


def flightlog_summary(
    approvals: dict[str, bool] | None = None,
    triage_approvals: dict[str, bool] | None = None,
    chat_approvals: dict[int, bool] | None = None,
) -> list[dict]:
    """The flight log per model and task type: calls, tokens, p50/p95 latency, failure rate
    and, where owner verdicts exist for the items served, the owner approval rate.

    `approvals` maps item_id -> approved? for owner output verdicts (auto and timeouts
    excluded: they say nothing about the model's quality); only the flights that wrote an
    answer borrow them. `triage_approvals` does the same for triage calls, and
    `chat_approvals` (flight id -> approved?) for the chat flights that wrote a delivery
    the owner judged. Banter and any other call has no verdict, so no approval rate."""
    groups: dict[tuple[str, str, str], dict] = {}
    rows = Flight.objects.values_list(
        "provider", "model", "task_type", "latency_ms", "ok", "tokens_in", "tokens_out", "item_id", "task", "id"
    )
    for provider, model, task_type, latency, ok, tin, tout, item_id, task, flight_id in rows.iterator():
        key = (provider, model, task_type or task)
        group = groups.setdefault(
            key, {"latencies": [], "calls": 0, "failures": 0, "tokens_in": 0, "tokens_out": 0, "items": set(),
             "triage_items": set(), "chat_judged": []}
        )
        if task == "chat" and chat_approvals and flight_id in chat_approvals:
            group["chat_judged"].append(chat_approvals[flight_id])
        group["calls"] += 1
        group["failures"] += 0 if ok else 1
        group["tokens_in"] += tin
        group["tokens_out"] += tout
        group["latencies"].append(latency)
        if item_id and task in OUTPUT_TASKS:
            group["items"].add(item_id)
        elif item_id and task == "triage":
            group["triage_items"].add(item_id)
    summary = []
    for (provider, model, task_type), g in sorted(groups.items()):
        judged = [approvals[i] for i in g["items"] if approvals and i in approvals]
        judged += [triage_approvals[i] for i in g["triage_items"] if triage_approvals and i in triage_approvals]
        judged += g["chat_judged"]
        summary.append(
            {
                "provider": provider,
                "model": model,
                "task_type": task_type,
                "calls": g["calls"],
                "tokens_in": g["tokens_in"],
                "tokens_out": g["tokens_out"],
                "latency_p50_ms": _percentile(g["latencies"], 0.50),
                "latency_p95_ms": _percentile(g["latencies"], 0.95),
                "failure_rate": round(g["failures"] / g["calls"], 4),
                "owner_verdicts": len(judged),
                "approval_rate": round(sum(judged) / len(judged), 4) if judged else None,
            }
        )
    return summary


def persona_of(crow: Crow) -> Persona:
    """What a brain knows of a crow."""
    return Persona(
        name=crow.name,
        epithet=crow.epithet,
        strength=crow.strength,
        backstory=crow.backstory,
        persona=crow.persona,
        voice=crow.voice,
        relationships=dict(crow.relationships or {}),
        openers=tuple(crow.openers or ()),
        closers=tuple(crow.closers or ()),
    )
