"""Every state change of the flock app. Each runs in a transaction and emits its events
through flock.events.emit."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.db import transaction

from flock.brains import BrainSpecError, check_brain_spec
from flock.brains.registry import SPEC_RE, SPEC_WORDS
from flock.errors import BadInput, Conflict, NotFound
from flock.events import emit, insert_with_events
from flock.models import Crow, Flight, JevTag
from flock.payloads import CrowHatched, CrowRetired, CrowUpdated
from flock.personas import FLOCK, ROSTER, TASK_TYPES


def seed_flock() -> int:
    """Create the built-in crows that are missing (a fresh database after migrate holds all
    ten). Idempotent; existing crows are left as the owner changed them."""
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
    prompt: str = "",
    with_events: bool = False,
) -> Flight:
    """Append one brain call to the flight log, with what the crow was asked. With
    `with_events`, in a `batched()` block the line is written with the block's events
    (flock.events.insert_with_events: on PostgreSQL in their statement), and the Flight
    returned has no id yet."""
    flight = Flight(
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
        prompt=prompt[:PROMPT_LOG_MAX_CHARS],
    )
    if with_events:
        insert_with_events(flight)
    else:
        flight.save(force_insert=True)
    return flight


def _jev_tag(answer: Any, *, subject: str = "", text: str = "", outcome: dict | None = None) -> JevTag:
    return JevTag(
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


def log_jev_tag(answer: Any, *, subject: str = "", text: str = "", outcome: dict | None = None) -> JevTag:
    """Append one Jev answer (a flock.jev.JevAnswer) to the tag log with its probabilities."""
    tag = _jev_tag(answer, subject=subject, text=text, outcome=outcome)
    tag.save(force_insert=True)
    return tag


def log_jev_tags(
    answers: list[Any], *, subject: str = "", text: str = "", with_events: bool = False,
    outcomes: list[dict] | None = None,
) -> list[JevTag]:
    """Append several Jev answers about one text to the tag log, in one INSERT. With
    `with_events`, in a `batched()` block they are written with the block's events
    (flock.events.insert_with_events), and have no ids until then. `outcomes`: each
    answer's outcome, in their order."""
    tags = [
        _jev_tag(answer, subject=subject, text=text, outcome=outcomes[i] if outcomes else None)
        for i, answer in enumerate(answers)
    ]
    if not with_events:
        return JevTag.objects.bulk_create(tags)
    for tag in tags:
        insert_with_events(tag)
    return tags


# --- Boss's orders: hatching and retiring crows (issue 5) -------------------------------

# The flight log keeps at most this much of each prompt.
PROMPT_LOG_MAX_CHARS = 20000
CROW_NAME_RE = re.compile(r"^[A-Z][A-Za-z0-9_-]{0,39}$")
RESERVED_NAMES = frozenset({"owner", "harness", "flock", "sentry", "elder", "all", "everyone"})
# The provider registry's spec shape: `mock` alone, every other provider with its model
# (a bare `openai` names no brain).
MODEL_SPEC_RE = SPEC_RE
MODEL_SPEC_WORDS = SPEC_WORDS
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
        raise BadInput(f"model must be {MODEL_SPEC_WORDS}; got {model[:60]!r}")
    if model:
        try:
            check_brain_spec(model)
        except BrainSpecError as exc:
            raise BadInput(str(exc)) from None
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
            CrowHatched(
                crow=crow.name, epithet=crow.epithet, strength=crow.strength, model=crow.brain_spec,
                task_types=crow.task_types, trust=0, hatched_by=hatched_by,
            ),
        )
    return crow


# Told, inside the transaction, when a crow can no longer speak (retired, or quarantined by
# trust): the rooms' layer ends what cannot go on without it (a debate it takes part in).
_grounded_hooks: list[Callable[[str, str], object]] = []


def on_crow_grounded(hook: Callable[[str, str], object]) -> Callable[[str, str], object]:
    """Register `hook(crow_name, why)`; `why` reads after the name ("was retired")."""
    if hook not in _grounded_hooks:
        _grounded_hooks.append(hook)
    return hook


def crow_grounded(name: str, why: str) -> None:
    for hook in _grounded_hooks:
        hook(name, why)


# Called at the start of a grounding transaction, before the crow's row is locked: each takes
# the rows its grounded hook will lock (a debate's room), so that the grounding takes them
# in the order a post in that room does (the room, then the crow, as when the Sentry flags
# the crow there). Locked after the crow, they could deadlock with such a post.
_grounding_locks: list[Callable[[str], object]] = []


def before_crow_grounded(lock: Callable[[str], object]) -> Callable[[str], object]:
    """Register `lock(crow_name)` (see _grounding_locks)."""
    if lock not in _grounding_locks:
        _grounding_locks.append(lock)
    return lock


def lock_for_grounding(name: str) -> None:
    """Inside the transaction that will ground the crow named `name` (any case, `@` or
    not), before it locks the crow's row."""
    found = Crow.objects.filter(name__iexact=(name or "").strip().lstrip("@")).values_list("name", flat=True).first()
    if found is None:
        return  # the caller's own lookup says so
    for lock in _grounding_locks:
        lock(found)


def retire_crow(name: str, *, retired_by: str, reason: str = "") -> Crow:
    """Retire a worker crow: it leaves the roster and every room, and is never invoked
    again; its history stays. Emits crow.retired. Whether it is idle is the caller's call
    (nests knows about claims; flock does not)."""
    with transaction.atomic():
        lock_for_grounding(name)
        crow = Crow.objects.select_for_update().filter(name__iexact=(name or "").strip().lstrip("@")).first()
        if crow is None:
            raise NotFound(f"no crow named {name!r}")
        if crow.status == Crow.Status.RETIRED:
            raise BadInput(f"{crow.name} is already retired")
        if crow.role in KEPT_ROLES:
            raise BadInput(f"{crow.name} holds the {crow.role} role and cannot be retired")
        crow.status = Crow.Status.RETIRED
        crow.save(update_fields=["status"])
        emit("crow.retired", CrowRetired(crow=crow.name, retired_by=retired_by, reason=reason[:300]))
        crow_grounded(crow.name, "was retired")
    return crow


# --- The owner edits a crow (the admin; PATCH /api/crows/{name} later) -----------------

# What the owner may change on a crow, with each field's limit. Status and role are not
# here: they move only through retire_crow and the quarantine actions, which emit their
# own events.
EDITABLE_TEXT = {"epithet": 120, "strength": STRENGTH_MAX, "backstory": 4000, "persona": 4000, "voice": 1000}
EDITABLE_FIELDS = (*EDITABLE_TEXT, "model", "task_types")


def clean_crow_field(field: str, value: Any) -> Any:
    if field == "model":
        if not isinstance(value, str):
            raise BadInput("model must be a string")
        value = value.strip()
        if value and not MODEL_SPEC_RE.fullmatch(value):
            raise BadInput(f"model must be blank or {MODEL_SPEC_WORDS}; got {value[:60]!r}")
        if value:
            try:
                check_brain_spec(value)
            except BrainSpecError as exc:
                raise BadInput(str(exc)) from None
        return value
    if field == "task_types":
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            raise BadInput("task_types must be a list of task type names")
        unknown = [t for t in value if t not in TASK_TYPES]
        if unknown:
            raise BadInput(f"unknown task types {', '.join(unknown)}; known: {', '.join(TASK_TYPES)}")
        return list(dict.fromkeys(value))
    if not isinstance(value, str):
        raise BadInput(f"{field} must be a string")
    value = value.strip()
    limit = EDITABLE_TEXT[field]
    if not 1 <= len(value) <= limit:
        raise BadInput(f"{field} must be 1–{limit} characters after trimming, got {len(value)}")
    return value


def update_crow(crow: Crow | str, *, by: str, **fields: Any) -> Crow:
    """Change a crow's persona, voice, model and the rest of EDITABLE_FIELDS.

    Emits `crow.updated` with the crow's name, who changed it (`by`), and for each field
    that really changed its new value (`changes`) and its old one (`previous`); `model` in
    the payload is the brain it now flies with (docs/OPERATING.md "Events the owner causes"). A call
    that changes nothing emits nothing. Retired crows keep their record as it was."""
    if not fields:
        raise BadInput(f"nothing to change; editable fields are {', '.join(EDITABLE_FIELDS)}")
    unknown = sorted(set(fields) - set(EDITABLE_FIELDS))
    if unknown:
        raise BadInput(f"cannot change {', '.join(unknown)}; editable fields are {', '.join(EDITABLE_FIELDS)}")
    cleaned = {field: clean_crow_field(field, value) for field, value in fields.items()}
    name = crow.name if isinstance(crow, Crow) else (crow or "").strip().lstrip("@")
    with transaction.atomic():
        row = Crow.objects.select_for_update().filter(name__iexact=name).first()
        if row is None:
            raise NotFound(f"no crow named {name!r}")
        if row.status == Crow.Status.RETIRED:
            raise Conflict(f"{row.name} is retired; its record stays as it was")
        previous = {f: getattr(row, f) for f, v in cleaned.items() if getattr(row, f) != v}
        if not previous:
            return row
        for field in previous:
            setattr(row, field, cleaned[field])
        row.save(update_fields=list(previous))
        emit(
            "crow.updated",
            CrowUpdated(
                crow=row.name, by=by, changes={f: cleaned[f] for f in previous}, previous=previous,
                model=row.brain_spec,
            ),
        )
        for hook in _crow_updated_hooks:
            hook(row, previous=previous, by=by)
    return row


_crow_updated_hooks: list[Callable[..., object]] = []


def on_crow_updated(hook: Callable[..., object]) -> Callable[..., object]:
    """Register `hook(crow, *, previous, by)`, called inside update_crow's transaction after
    `crow.updated` (the chatroom scores a model the owner picked: docs/GOVERNANCE.md)."""
    if hook not in _crow_updated_hooks:
        _crow_updated_hooks.append(hook)
    return hook
