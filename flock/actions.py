"""Every state change of the flock app. Each runs in a transaction and emits its events
through flock.events.emit."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from flock.errors import BadInput, Conflict, NotFound
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
        source=str(getattr(answer, "source", "local") or "local"),
        local_choice=str(getattr(answer, "local_choice", "") or answer.choice),
    )


# --- Boss's orders: hatching and retiring crows (issue 5) -------------------------------

CROW_NAME_RE = re.compile(r"^[A-Z][A-Za-z0-9_-]{0,39}$")
RESERVED_NAMES = frozenset({"owner", "harness", "flock", "sentry", "elder", "all", "everyone"})
MODEL_SPEC_RE = re.compile(r"^(?:mock|openai|anthropic)(?::[\w.:/-]{1,100})?$")
STRENGTH_MAX = 200
# Roles that keep the flock running; Boss may not retire them.
KEPT_ROLES = (Crow.Role.ASSISTANT, Crow.Role.CHIEF_OF_STAFF, Crow.Role.SENTRY, Crow.Role.ELDER)


def hatch_crow(
    name: str,
    *,
    strength: str,
    hatched_by: str,
    model: str = "",
    epithet: str = "",
    persona: str = "",
    voice: str = "",
    task_types: list[str] | None = None,
) -> Crow:
    """A new roster crow (a worker) with a persona and a brain. Its trust starts at 0
    (stranger) for every task type simply because its ledger is empty. Emits crow.hatched."""
    name = (name or "").strip().lstrip("@")
    name = name[:1].upper() + name[1:]
    if not CROW_NAME_RE.fullmatch(name):
        raise BadInput(f"a crow's name is 1–40 letters, digits, '-' or '_', starting with a letter; got {name!r}")
    if name.lower() in RESERVED_NAMES:
        raise BadInput(f"{name!r} is a reserved name")
    strength = " ".join((strength or "").split()).rstrip(".")
    if not 1 <= len(strength) <= STRENGTH_MAX:
        raise BadInput(f"say what the crow is good at (1–{STRENGTH_MAX} characters)")
    model = (model or "").strip()
    if model and not MODEL_SPEC_RE.fullmatch(model):
        raise BadInput(f"model must be mock, openai:<model> or anthropic:<model>, got {model!r}")
    with transaction.atomic():
        if Crow.objects.select_for_update().filter(name__iexact=name).exists():
            raise Conflict(f"a crow named {name} already exists (names are never reused)")
        crow = Crow.objects.create(
            name=name,
            epithet=epithet or "the Fledgling",
            strength=strength,
            backstory=f"{name} was hatched by {hatched_by} at the owner's request, to be good at {strength}.",
            persona=persona
            or (
                f"You are {name}, a newly hatched crow in the flock, good at {strength}. You are new "
                "here: say plainly what you know, ask when unsure, and never claim experience you "
                "do not have."
            ),
            voice=voice or "Short, eager, plain sentences; asks one question when unsure.",
            model=model,
            role=Crow.Role.WORKER,
            in_roster=True,
            task_types=list(task_types or []),
            hatched_by=hatched_by,
        )
        emit(
            "crow.hatched",
            {
                "crow": crow.name,
                "epithet": crow.epithet,
                "strength": crow.strength,
                "model": crow.brain_spec,
                "task_types": crow.task_types,
                "trust": 0,
                "hatched_by": hatched_by,
            },
        )
    return crow


def retire_crow(name: str, *, retired_by: str, reason: str = "") -> Crow:
    """Retire a worker crow: it leaves the roster and every room, and is never invoked
    again; its history stays. Emits crow.retired. Whether it is idle is the caller's call
    (nests knows about claims; flock does not)."""
    with transaction.atomic():
        crow = Crow.objects.select_for_update().filter(name__iexact=(name or "").strip().lstrip("@")).first()
        if crow is None:
            raise NotFound(f"no crow named {name!r}")
        if crow.status == Crow.Status.RETIRED:
            raise BadInput(f"{crow.name} is already retired")
        if crow.role in KEPT_ROLES:
            raise BadInput(f"{crow.name} holds the {crow.role} role and cannot be retired")
        crow.status = Crow.Status.RETIRED
        crow.save(update_fields=["status"])
        emit("crow.retired", {"crow": crow.name, "retired_by": retired_by, "reason": reason[:300]})
    return crow
