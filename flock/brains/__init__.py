"""Brains: how a crow thinks.

``get_brain("mock" | "mock:<label>" | "openai:<model>" | "anthropic:<model>")`` returns a
``Brain`` whose ``think(BrainRequest) -> BrainReply`` never raises: every failure (a
missing key, an unreachable host, a timeout, an HTTP error, an odd response, an unknown
provider) comes back as ``BrainReply(ok=False, error="<one sentence>")``.

The mock brain is the offline default (``CROWS_BRAIN=mock``). docs/BRAINS.md describes
every setting, the header grammar and the mock's behaviour.
"""

from __future__ import annotations

import threading

from flock.brains.config import default_brain_spec, provider_config, setting
from flock.brains.header import (
    Header,
    contract_footer,
    format_header,
    parse_header,
    strip_header,
)
from flock.brains.mock import MockBrain
from flock.brains.prompts import estimate_tokens, prompt_text, prompt_tokens, system_prompt
from flock.brains.providers import AnthropicBrain, OpenAIBrain, warm_up
from flock.brains.registry import (
    WIRE_ANTHROPIC_MESSAGES,
    WIRE_MOCK,
    WIRE_OPENAI_CHAT,
    WIRE_SCRIPT,
    parse_spec,
    spec_problem,
)
from flock.brains.script import ScriptBrain, ScriptError, load_rules
from flock.brains.types import Brain, BrainReply, BrainRequest, BrainSpecError, Persona

__all__ = [
    "prompt_text",
    "prompt_tokens",
    "Brain",
    "BrainReply",
    "BrainRequest",
    "ErrorBrain",
    "Header",
    "MockBrain",
    "ScriptBrain",
    "BrainSpecError",
    "ScriptError",
    "check_brain_spec",
    "Persona",
    "contract_footer",
    "estimate_tokens",
    "format_header",
    "get_brain",
    "parse_header",
    "strip_header",
    "system_prompt",
]

# The brain for each wire format a provider in the registry speaks.
SDK_BRAINS = {WIRE_OPENAI_CHAT: OpenAIBrain, WIRE_ANTHROPIC_MESSAGES: AnthropicBrain}


class ErrorBrain:
    """A brain that cannot think: every reply is ok=False with the same clear error."""

    def __init__(self, provider: str, model: str, error: str) -> None:
        self.provider = provider
        self.model = model
        self.error = error

    def think(self, request: BrainRequest) -> BrainReply:
        return BrainReply.failed(self.error, provider=self.provider, model=self.model)


_brains: dict[str, Brain] = {}
_brains_lock = threading.Lock()


def get_brain(model_spec: str = "") -> Brain:
    """The brain for ``provider:model``; an empty spec means CROWS_BRAIN.

    The model part may itself hold colons (``openai:llama3.1:8b`` for Ollama). Brains are
    stateless and cached per spec; settings are read on each call, not here.
    """
    spec = (model_spec or "").strip() or default_brain_spec()
    key = spec
    known = parse_spec(spec).known
    if known is not None and known.wire == WIRE_SCRIPT:
        # Whether a script may be read depends on settings (docs/SECURITY.md): a brain
        # built under one CROWS_BRAIN or CROWS_SCRIPT_DIR is not reused under another.
        key = f"{spec}\0{_is_operators(spec)}\0{setting('CROWS_SCRIPT_DIR')}"
    with _brains_lock:
        brain = _brains.get(key)
        if brain is None:
            brain = _build(spec)
            _brains[key] = brain
        return brain


def _is_operators(spec: str) -> bool:
    """Whether `spec` is the operator's own CROWS_BRAIN, which may name a script anywhere;
    every other script spec names a file inside CROWS_SCRIPT_DIR."""
    return spec.strip() == default_brain_spec()


def _build(spec: str) -> Brain:
    parsed = parse_spec(spec)
    provider, model = parsed.provider, parsed.model
    known = parsed.known
    if known is not None and known.wire == WIRE_MOCK:
        return MockBrain(model=model or known.default_model)
    if known is not None and known.wire == WIRE_SCRIPT:
        try:
            return ScriptBrain(model, load_rules(model, operator=_is_operators(spec)))
        except ScriptError as exc:
            return ErrorBrain(provider, model, str(exc))
    problem = spec_problem(spec)
    if known is None:
        return ErrorBrain(provider or "unknown", model or spec, problem)
    if problem:
        return ErrorBrain(provider, model, problem)
    warm_up(provider)
    return SDK_BRAINS[known.wire](model, provider=known.name)


def check_brain_spec(spec: str) -> None:
    """Raise BrainSpecError when `spec` names no brain that can think: an unknown
    provider, a provider without its model, or a `script:` file that cannot be used (one
    outside CROWS_SCRIPT_DIR, unless `spec` is the operator's own CROWS_BRAIN). Run at
    start-up for CROWS_BRAIN, so a typo stops the server with a message naming it instead
    of failing every crow's call (docs/BRAINS.md)."""
    spec = (spec or "").strip() or "mock"
    problem = spec_problem(spec)
    if problem:
        raise BrainSpecError(problem)
    parsed = parse_spec(spec)
    if parsed.known is not None and parsed.known.wire == WIRE_SCRIPT:
        load_rules(parsed.model, operator=_is_operators(spec))  # its ScriptError is a BrainSpecError


def missing_key(spec: str) -> str:
    """Where to set the key a real provider's `spec` needs when none is set anywhere, or "":
    not fatal at start-up (a key may come later, crows may use other models), but every
    call of that brain fails until it is."""
    known = parse_spec((spec or "").strip() or "mock").known
    if known is None or not known.remote:
        return ""
    config = provider_config(known.name)
    return "" if config.api_key else config.key_sources
