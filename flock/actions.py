"""Every state change of the flock app. Each runs in a transaction and emits its events
through flock.events.emit."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from flock.events import emit, register_event_names
from flock.models import Crow, Flight, JevTag

register_event_names("crow.hatched", "crow.retired")


def seed_flock() -> int:
    """Create the built-in crows that are missing (a fresh database after migrate holds all
    ten). Idempotent; existing crows are left as the owner changed them."""
    from flock.personas import FLOCK, ROSTER

    created = 0
    with transaction.atomic():
        for spec in FLOCK:
            if Crow.objects.filter(name=spec["name"]).exists():
                continue
            Crow.objects.create(
                name=spec["name"],
                epithet=spec["epithet"],
                strength=spec["strength"],
                backstory=spec["backstory"],
                persona=spec["persona"],
                voice=spec["voice"],
                role=spec.get("role", Crow.Role.WORKER),
                in_roster=spec["name"] in ROSTER,
                task_types=list(spec.get("task_types", [])),
                relationships=dict(spec.get("relationships", {})),
                openers=list(spec.get("openers", [])),
                closers=list(spec.get("closers", [])),
            )
            created += 1
    return created


def record_flight(
    *,
    crow: str,
    provider: str,
    model: str,
    task: str,
    ok: bool,
    tokens_in: int = 0,
    tokens_out: int = 0,
    latency_ms: float = 0.0,
    error: str = "",
    task_type: str = "",
    list_id: str = "",
    item_id: str = "",
    nest_id: str = "",
    msg_id: str = "",
) -> Flight:
    """Append one brain call to the flight log."""
    return Flight.objects.create(
        crow=crow,
        provider=provider,
        model=model,
        task=task,
        task_type=task_type,
        list_id=list_id,
        item_id=item_id,
        nest_id=nest_id,
        msg_id=msg_id,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        latency_ms=latency_ms,
        ok=ok,
        error=error[:2000],
    )


def log_jev_tag(answer: Any, *, subject: str = "", text: str = "", outcome: dict | None = None) -> JevTag:
    """Append one Jev answer (a flock.jev.JevAnswer) to the tag log with its probabilities."""
    return JevTag.objects.create(
        question=answer.question,
        choice=answer.choice,
        band=answer.band,
        probs={k: round(float(v), 6) for k, v in answer.probs.items()},
        impl=answer.impl,
        version=answer.version,
        latency_ms=float(answer.latency_ms),
        subject=subject[:80],
        text=text[:4000],
        outcome=outcome or {},
    )
