"""Deterministic stand-ins at the edge of the world, for chatroom tests.

- `ScriptedBrain`: a Brain whose reply is whatever a test's function says, given the
  BrainRequest; it records every request it was asked, so a test can read the prompts.
- `FakeJev`: answers Jev's questions by rules a test sets (a kind for text containing a
  word, or "unsure" so the poster's header decides), with probabilities, as JevAnswer.

Both are installed with pytest's monkeypatch, in-process only (see tests/nests/conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from flock.brains import BrainReply, BrainRequest
from flock.jev import JevAnswer
from flock.jev.pairs import PAIR_SEPARATOR


class ScriptedBrain:
    provider = "scripted"

    def __init__(self, script: Callable[[BrainRequest], str], *, tokens: int = 10, ok: bool = True) -> None:
        self.script = script
        self.tokens = tokens
        self.ok = ok
        self.requests: list[BrainRequest] = []

    def think(self, request: BrainRequest) -> BrainReply:
        self.requests.append(request)
        if not self.ok:
            return BrainReply(ok=False, text="", tokens_in=self.tokens, tokens_out=0, provider="scripted",
                              model="script", latency_ms=0.0, error="scripted failure")
        return BrainReply(ok=True, text=self.script(request), tokens_in=self.tokens, tokens_out=self.tokens,
                          provider="scripted", model="script", latency_ms=0.0)


KIND_CHOICES = ("claim", "decline", "deliver", "refer", "request", "say")


@dataclass
class FakeJev:
    """`kinds`: word -> kind; the first word found in a text (lower-cased) gives Jev's
    sure answer, otherwise Jev is unsure (and says `say`)."""

    kinds: dict[str, str] = field(default_factory=dict)
    mode: str = "solo"
    mode_band: str = "high"
    task_type: str = "writing"
    # `expectation_met`: word -> (choice, band), looked for in the later message of the pair
    # (before flock.jev.pairs.PAIR_SEPARATOR). Empty: Jev cannot answer it (no model yet).
    met: dict[str, tuple[str, str]] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)

    def ask(self, question: str, text: str) -> JevAnswer:
        self.asked.append((question, text))
        if question == "kind":
            for word, kind in self.kinds.items():
                if word in text.lower():
                    return self._answer("kind", KIND_CHOICES, kind, "high")
            return self._answer("kind", KIND_CHOICES, "say", "unsure")
        if question == "mode":
            return self._answer("mode", ("murder", "solo", "split"), self.mode, self.mode_band)
        if question == "expectation_met" and self.met:
            later = text.split(PAIR_SEPARATOR, 1)[0].lower()
            choice, band = next((m for word, m in self.met.items() if word in later), ("pending", "unsure"))
            return self._answer("expectation_met", ("met", "missed", "pending"), choice, band)
        if question == "task_type":
            types = ("chat", "code", "data", "planning", "research", "writing")
            return self._answer("task_type", types, self.task_type, "high")
        raise KeyError(question)

    @staticmethod
    def _answer(question: str, choices: tuple[str, ...], choice: str, band: str) -> JevAnswer:
        top = 0.95 if band == "high" else 0.5
        rest = (1 - top) / (len(choices) - 1)
        probs = {c: (top if c == choice else rest) for c in choices}
        return JevAnswer(question=question, choice=choice, probs=probs, band=band, impl="fake",
                         version="fake-1", latency_ms=0.0)


# --- fixtures the chatroom tests share (bind them in a test module by name) --------------


@pytest.fixture
def fake_jev(monkeypatch: pytest.MonkeyPatch) -> FakeJev:
    """Jev made deterministic: unsure about every kind unless a test teaches it words."""
    fake = FakeJev()
    monkeypatch.setattr("flock.jev.ask", fake.ask)
    monkeypatch.setattr("flock.jev.fit_score", lambda task, profile: 0.0)
    return fake


@pytest.fixture
def script_brains(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ScriptedBrain]:
    """`script_brains(fn)`: every crow thinks with a ScriptedBrain running `fn`."""

    def install(script: Callable[[BrainRequest], str], **kw: object) -> ScriptedBrain:
        brain = ScriptedBrain(script, **kw)  # type: ignore[arg-type]
        monkeypatch.setattr("nests.actions.chat.crows.get_brain", lambda spec="": brain)
        return brain

    return install


def run_crows() -> int:
    """Run every queued crow invocation (and what they cause) inline, as the worker would."""
    from flock import worker

    return worker.run_pending()


def give_rights(*crows: str, level: int = 1) -> None:
    """Speaking rights for every task type (docs/CHATROOM.md): a regular (1) may claim open
    requests, a trusted crow (2) may also open requests and deliver unasked."""
    from flock.personas import TASK_TYPES

    for crow in crows:
        for task_type in TASK_TYPES:
            make_trusted(crow, task_type, level=level)


def make_trusted(crow: str, task_type: str, level: int = 2) -> None:
    """Record owner approvals in the trust ledger until `crow` reaches `level`."""
    from trust.actions import seed_trust

    seed_trust(crow, task_type=task_type, level=level)
