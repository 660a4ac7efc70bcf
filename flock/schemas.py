from __future__ import annotations

from typing import Any

from ninja import Schema


class CrowOut(Schema):
    name: str
    epithet: str
    strength: str
    backstory: str
    role: str
    status: str
    model: str
    task_types: list[str]


class CrowPatchIn(Schema):
    """Fields the owner may change (docs/REVIEW.md); each is checked by update_crow, which
    names the exact problem in a 400. Absent fields stay as they are."""

    model: Any = None
    epithet: Any = None
    strength: Any = None
    backstory: Any = None
    persona: Any = None
    voice: Any = None
    task_types: Any = None


class BrainTestIn(Schema):
    """Which brain to test: a crow's (`crow`), a spec (`model`), or neither: the default."""

    crow: str | None = None
    model: str | None = None


class BrainTestOut(Schema):
    ok: bool
    spec: str
    provider: str
    model: str
    latency_ms: float
    reply: str
    error: str
    mock: bool


class BrainsOut(Schema):
    default: str
    default_is_mock: bool
    crows: list[CrowOut]
