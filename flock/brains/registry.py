"""The brain providers, in one place: each one's name, the wire format its brain speaks,
where its key and base URL come from, its default model, and how a model spec such as
`anthropic:claude-sonnet-4@20250514` parses.

Everything that reads a provider reads it here: building a brain (`get_brain`), warming a
provider's SDK, the model-spec check of the actions and the API document, the start-up
and settings-page key checks, and Boss's orders ("… using openai:gpt-4o"). A provider
added here is a provider everywhere. No imports of the rest of the code: everything
imports this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The wire formats a brain speaks (flock/brains: mock.py, script.py, providers.py).
WIRE_MOCK = "mock"
WIRE_SCRIPT = "script"
WIRE_OPENAI_CHAT = "openai-chat-completions"
WIRE_ANTHROPIC_MESSAGES = "anthropic-messages"


@dataclass(frozen=True)
class Provider:
    name: str  # the part of a spec before the first colon
    label: str  # in sentences: "OpenAI"
    wire: str  # one of the WIRE_* formats
    # The model part a spec must carry: an SDK provider calls a named model, a script
    # names its file; the mock alone may go without (its label is then "mock").
    needs_model: bool
    default_model: str = ""  # the model a bare provider name in an order means ("" none)
    sdk: str = ""  # the SDK module to import (and warm up), for a provider called over HTTP
    key_setting: str = ""  # CROWS_<NAME>_API_KEY, read first
    env_key: str = ""  # the SDK's own variable, read when the setting is blank
    base_url_setting: str = ""  # CROWS_<NAME>_BASE_URL: "" means the SDK's default
    env_base_url: str = ""  # the SDK's own base-URL variable
    default_host: str = ""  # where the SDK calls without a base URL, for error sentences

    @property
    def remote(self) -> bool:
        """Called over the network: needs a key or a base URL, and has an SDK to warm."""
        return bool(self.sdk)


def _sdk_provider(name: str, label: str, wire: str, default_model: str, host: str) -> Provider:
    upper = name.upper()
    return Provider(
        name=name, label=label, wire=wire, needs_model=True, default_model=default_model, sdk=name,
        key_setting=f"CROWS_{upper}_API_KEY", env_key=f"{upper}_API_KEY",
        base_url_setting=f"CROWS_{upper}_BASE_URL", env_base_url=f"{upper}_BASE_URL", default_host=host,
    )


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider(name="mock", label="the offline mock", wire=WIRE_MOCK, needs_model=False, default_model="mock"),
        _sdk_provider("openai", "OpenAI", WIRE_OPENAI_CHAT, "gpt-4o-mini", "api.openai.com"),
        _sdk_provider("anthropic", "Anthropic", WIRE_ANTHROPIC_MESSAGES, "claude-sonnet-4-5", "api.anthropic.com"),
        Provider(name="script", label="a script", wire=WIRE_SCRIPT, needs_model=True),
    )
}

# A model part: 1–100 letters, digits or . _ : / @ - ("openai:llama3.1:8b" for Ollama, "@"
# for Vertex-style versions, "/" for OpenRouter's "anthropic/claude-sonnet-4.6").
MODEL_CHARS = r"[\w.:/@-]"
MODEL_MAX_CHARS = 100


def provider_names(*, remote: bool | None = None, needs_model: bool | None = None) -> tuple[str, ...]:
    return tuple(
        p.name for p in PROVIDERS.values()
        if (remote is None or p.remote == remote) and (needs_model is None or p.needs_model == needs_model)
    )


def names_pattern(names: tuple[str, ...] | None = None) -> str:
    """A regex alternation of provider names (all of them by default), for the orders."""
    return "|".join(re.escape(n) for n in (names if names is not None else tuple(PROVIDERS)))


def _spec_pattern() -> str:
    model = f"{MODEL_CHARS}{{1,{MODEL_MAX_CHARS}}}"
    bare = names_pattern(provider_names(needs_model=False))
    named = names_pattern(provider_names(needs_model=True))
    return f"(?:{bare})(?::{model})?|(?:{named}):{model}"


# A whole model spec as the actions accept it and the API document states it: a provider
# that needs no model alone or with one, every other provider with its model.
SPEC_PATTERN = _spec_pattern()
SPEC_RE = re.compile(f"^(?:{SPEC_PATTERN})$")
_FORMS = [
    p.name if not p.needs_model else f"{p.name}:<{'path' if p.wire == WIRE_SCRIPT else 'model'}>"
    for p in PROVIDERS.values()
]
# "mock, openai:<model>, anthropic:<model> or script:<path>"
SPEC_CHOICES = f"{', '.join(_FORMS[:-1])} or {_FORMS[-1]}"
SPEC_WORDS = f"{SPEC_CHOICES}, the part after the colon 1–{MODEL_MAX_CHARS} letters, digits or . _ : / @ -"


@dataclass(frozen=True)
class BrainSpec:
    provider: str  # lower case, as written ("" or unknown names stay what they are)
    model: str

    @property
    def known(self) -> Provider | None:
        return PROVIDERS.get(self.provider)


def parse_spec(spec: str) -> BrainSpec:
    """`provider:model`, split at the first colon (the model part may hold more)."""
    provider, _, model = (spec or "").strip().partition(":")
    return BrainSpec(provider.strip().lower(), model.strip())


def spec_problem(spec: str) -> str:
    """What is wrong with a spec's shape, or "": an unknown provider, or a provider that
    needs a model without one. (A script's file is judged when it is loaded.)"""
    parsed = parse_spec(spec)
    provider = parsed.known
    if provider is None:
        return f"Unknown brain provider {parsed.provider!r} in {spec!r}: use {SPEC_CHOICES}."
    # A script's missing path is load_rules' to name ("needs a path"), with its other rules.
    if provider.needs_model and not parsed.model and provider.wire != WIRE_SCRIPT:
        return f"Brain spec {spec!r} names no model: write {provider.name}:<model>."
    return ""


def complete_spec(spec: str) -> str:
    """A spec as an order may write it: a provider named alone ("using openai") means its
    default model. Anything else is returned as written."""
    parsed = parse_spec(spec)
    provider = parsed.known
    if provider is not None and not parsed.model and provider.needs_model and provider.default_model:
        return f"{provider.name}:{provider.default_model}"
    return spec
