"""Test connection (docs/REVIEW.md "Brains from the page"): one tiny call to a brain.

The owner checks a crow's brain, or the default one, from /settings before trusting a
list to it. The call asks for a one-word reply with a small token cap; the answer is the
latency, or the provider's own error sentence (the brains already word every failure as
one sentence naming the provider, the model, the host and what went wrong).

The whole test (building the brain, reading a script's file, the call) is bounded by
CROWS_BRAIN_TEST_TIMEOUT_S: it runs on a thread the request stops waiting for at the
deadline, and a provider is given no more than that time for its one attempt, so a brain
that never answers holds neither the request nor, for long, the thread.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from flock.brains import get_brain
from flock.brains.config import brain_test_timeout_s, default_brain_spec, provider_config
from flock.brains.providers import OUT_OF_TOKENS
from flock.brains.registry import WIRE_MOCK, parse_spec
from flock.brains.types import BrainReply, BrainRequest, Persona

PROBE_MAX_TOKENS = 16
_PROBE_PERSONA = Persona(
    name="Probe", epithet="the connection check", strength="", backstory="", persona="", voice="plain"
)


def is_mock(spec: str) -> bool:
    known = parse_spec(spec).known
    return known is not None and known.wire == WIRE_MOCK


def why_no_model(spec: str) -> str:
    """Why a crow on `spec` (blank: the default brain) cannot call a real model, in words,
    or "" when it can: the offline mock calls none, and an OpenAI or Anthropic brain needs
    a key or a base URL (a local server) from the environment. A script brain answers from
    its file and counts as able. The banner and /settings say this; docs/REVIEW.md."""
    spec = (spec or "").strip() or default_brain_spec()
    known = parse_spec(spec).known
    if known is not None and known.wire == WIRE_MOCK:
        return "the offline mock: no model is called"
    if known is not None and known.remote:
        config = provider_config(known.name)
        if not config.api_key and not config.base_url:
            return (
                f"no {known.label} key: set {config.key_sources} "
                f"(or {known.base_url_setting} for a local server) and restart"
            )
    return ""


def test_connection(spec: str) -> dict[str, Any]:
    """One tiny call through the brain `spec` names (blank: the default brain)."""
    spec = (spec or "").strip() or default_brain_spec()
    timeout_s = brain_test_timeout_s()
    request = BrainRequest(
        persona=_PROBE_PERSONA,
        task="chat",
        messages=[{"role": "user", "content": "Reply with the single word: pong"}],
        max_tokens=PROBE_MAX_TOKENS,
        context={},
        # One call, as the page promises: a retry would double a slow provider's wait.
        single_attempt=True,
        timeout_s=timeout_s,
    )
    started = time.monotonic()
    reply = _within(timeout_s, spec, request)
    elapsed_ms = reply.latency_ms or (time.monotonic() - started) * 1000
    note = ""
    if not reply.ok and OUT_OF_TOKENS in (reply.error or ""):
        # It answered, with the key and model it was given: a reasoning model spent the
        # test's few tokens thinking. Connected; the owner hears what that means.
        note = (
            f"it spent the test's {PROBE_MAX_TOKENS} tokens thinking and wrote nothing yet: a reasoning "
            "model, which needs room to think in every answer"
        )
        reply = dataclasses.replace(reply, ok=True, text="", error="")
    return {
        "ok": bool(reply.ok),
        "spec": spec,
        "provider": reply.provider,
        "model": reply.model,
        "latency_ms": round(float(elapsed_ms), 1),
        "reply": (reply.text or "").strip()[:200] if reply.ok else "",
        "error": "" if reply.ok else (reply.error or "the brain came back with nothing"),
        "mock": is_mock(spec),
        "note": note,
    }


def _within(timeout_s: float, spec: str, request: BrainRequest) -> BrainReply:
    """The brain's reply, or a failed one when none came within `timeout_s`."""
    box: dict[str, BrainReply] = {}

    def think() -> None:
        try:
            box["reply"] = get_brain(spec).think(request)
        except Exception as exc:  # noqa: BLE001 - a brain never raises; if one does, the test says so
            box["reply"] = BrainReply.failed(f"the brain failed: {type(exc).__name__}: {exc}")

    worker = threading.Thread(target=think, name="brain-test", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if "reply" in box:
        return box["reply"]
    provider, _, model = spec.partition(":")
    return BrainReply.failed(
        f"no answer within {timeout_s:g} s (CROWS_BRAIN_TEST_TIMEOUT_S)",
        provider=provider.strip().lower(), model=model.strip(), latency_ms=timeout_s * 1000,
    )
