"""What goes into a brain and what comes out. Plain frozen dataclasses, no Django."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

TASKS: tuple[str, ...] = ("triage", "answer", "subtask", "merge", "synthesise", "banter", "chat")
TASK_TYPES: tuple[str, ...] = ("writing", "research", "code", "planning", "data", "chat")
MODES: tuple[str, ...] = ("solo", "split", "murder")
CHAT_EXPECTS: tuple[str, ...] = ("claim", "deliver", "decline", "say", "answer")


@dataclass(frozen=True)
class Persona:
    """What a brain knows of the crow it thinks for.

    ``openers`` and ``closers`` are optional in-voice phrases (the Crow model's fields of
    the same names); the mock brain prefers them to its own stock when they are given.
    """

    name: str
    epithet: str
    strength: str
    backstory: str
    persona: str
    voice: str
    relationships: dict[str, str] = field(default_factory=dict)
    openers: tuple[str, ...] = ()
    closers: tuple[str, ...] = ()
    # False for a helper that thinks through a brain but is no crow (Jev's second
    # opinion): its prompt then does not open with "You are …, a crow in the flock".
    crow: bool = True


@dataclass(frozen=True)
class BrainRequest:
    """One thought to think.

    ``messages`` is the conversation so far, oldest first, each ``{"role": "user" |
    "assistant", "content": str}`` where "assistant" is this crow's own earlier turns.
    ``context`` carries the task's details (see docs/BRAINS.md for the keys each task
    reads); ``system`` is extra system text such as budgets, added after the persona.
    ``single_attempt`` asks a provider brain for one attempt whatever CROWS_BRAIN_RETRIES
    allows: a caller that waits for one attempt only (Jev's second opinion) must not have
    a retry billed after it has stopped listening. ``timeout_s``, when set, caps a
    provider's time for the call below CROWS_BRAIN_TIMEOUT_S (Test connection's bound).
    """

    persona: Persona
    task: str
    messages: list[dict[str, Any]]
    max_tokens: int
    context: dict[str, Any]
    system: str = ""
    single_attempt: bool = False
    timeout_s: float | None = None


@dataclass(frozen=True)
class BrainReply:
    """What came back. ``ok`` False means ``error`` says why, in one sentence."""

    ok: bool
    text: str
    tokens_in: int
    tokens_out: int
    provider: str
    model: str
    latency_ms: float
    error: str = ""

    @classmethod
    def failed(
        cls, error: str, *, provider: str = "", model: str = "", latency_ms: float = 0.0, tokens_in: int = 0
    ) -> BrainReply:
        """A reply that carries no text, only why (the one shape every brain fails with)."""
        return cls(
            ok=False, text="", tokens_in=tokens_in, tokens_out=0,
            provider=provider, model=model, latency_ms=latency_ms, error=error,
        )


class BrainSpecError(ValueError):
    """A brain spec (`provider:model`) that names no brain that can think; the message
    says what is wrong and how to write it."""


@runtime_checkable
class Brain(Protocol):
    """Anything that thinks. ``think`` never raises: errors come back as ``ok=False``."""

    def think(self, request: BrainRequest) -> BrainReply: ...
