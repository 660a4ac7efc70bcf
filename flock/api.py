from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from flock import actions, queries
from flock.brains.config import default_brain_spec
from flock.brains.probe import is_mock, test_connection, why_no_model
from flock.errors import BadInput, Conflict, NotFound
from flock.models import Crow
from flock.schemas import (
    BrainsOut,
    BrainTestIn,
    BrainTestOut,
    CrowOut,
    CrowPatchIn,
    IdParam,
    JevTagOut,
    RowsLimit,
    errors,
)

router = Router(tags=["flock"])


def crow_out(c: Crow) -> CrowOut:
    return CrowOut(
        name=c.name,
        epithet=c.epithet,
        strength=c.strength,
        backstory=c.backstory,
        role=c.role,
        status=c.status,
        model=c.brain_spec,
        task_types=c.task_types,
        pinned=bool(c.model),
    )


@router.get("/crows", response={200: list[CrowOut], **errors()})
def list_crows(request: HttpRequest) -> list[CrowOut]:
    return [crow_out(c) for c in queries.living_crows()]


@router.patch("/crows/{name}", response={200: CrowOut, **errors(404, 409, write=True)})
def patch_crow(request: HttpRequest, name: IdParam, payload: CrowPatchIn) -> CrowOut:
    """Change a crow through the same action the admin uses (`crow.updated`).
    `model: ""` puts the crow back on the default brain."""
    fields = payload.model_dump(exclude_unset=True)
    confirmed = fields.pop("confirm", False)
    if any(v is None for v in fields.values()):
        raise BadInput(f"{', '.join(k for k, v in fields.items() if v is None)} cannot be null")
    if not fields:
        raise BadInput("nothing to change: name at least one field besides confirm")
    # A model no key can call is refused unless the owner confirms it: saved silently, the
    # crow would fail every flight, and the banner would call it a real model.
    model = fields.get("model")
    if not Crow.objects.filter(name__iexact=name.strip().lstrip("@")).exists():
        raise NotFound(f"no crow named {name[:40]!r}")
    if isinstance(model, str) and model.strip() and not is_mock(model) and not confirmed:
        problem = why_no_model(actions.clean_crow_field("model", model))
        if problem:
            raise Conflict(f"{model.strip()} cannot be called yet: {problem}. Send confirm: true to save it anyway.")
    return crow_out(actions.update_crow(name, by="owner", **fields))


@router.get("/brains", response={200: BrainsOut, **errors()})
def brains(request: HttpRequest) -> BrainsOut:
    """The default brain and every crow's, for /settings."""
    default = default_brain_spec()
    return BrainsOut(default=default, default_is_mock=is_mock(default), crows=[crow_out(c) for c in queries.living_crows()])


@router.post("/brains/test", response={200: BrainTestOut, **errors(404, write=True)})
def test_brain(request: HttpRequest, payload: BrainTestIn) -> dict:
    """Test connection: one tiny call, answered with the latency or the provider's error."""
    if payload.crow and payload.model:
        raise BadInput("name a crow or a model, not both")
    spec = payload.model or ""
    if payload.crow:
        crow = Crow.objects.filter(name__iexact=payload.crow.strip().lstrip("@")).first()
        if crow is None:
            raise NotFound(f"no crow named {payload.crow[:40]!r}")
        # A retired crow has left the flock (GET /api/crows and /api/brains leave it out):
        # it has no brain of its own left to test.
        if crow.status == Crow.Status.RETIRED:
            raise NotFound(f"{crow.name} is retired: it has no brain to test")
        spec = crow.brain_spec
    elif spec:
        spec = actions.clean_crow_field("model", spec)
    return test_connection(spec)


@router.get("/jev/tags", response={200: list[JevTagOut], **errors()})
def jev_tags(request: HttpRequest, subject: IdParam = "", question: IdParam = "", limit: RowsLimit = 50) -> list[dict]:
    """Jev's tag log, newest first: every answer with its probabilities (docs/JEV.md).
    `subject` is what was tagged: a message's `msg_id` (its kind), an `item_id` (its triage)."""
    return queries.jev_tags(subject=subject, question=question, limit=limit)
