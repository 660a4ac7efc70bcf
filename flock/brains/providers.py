"""Real brains: OpenAI-compatible Chat Completions and Anthropic Messages, via the official SDKs.

``openai:<model>`` speaks Chat Completions, so it also drives anything that serves that
API (Ollama, vLLM, llama.cpp's server, OpenRouter, LiteLLM) when CROWS_OPENAI_BASE_URL
points at it. ``anthropic:<model>`` speaks the Messages API.

Time is bounded: a call never takes longer than CROWS_BRAIN_TIMEOUT_S x
(CROWS_BRAIN_RETRIES + 1). The SDKs' own retries are switched off (``max_retries=0``)
because they honour a server's Retry-After of up to two minutes, which would break that
bound; this module retries instead, on the same conditions (connection failures,
timeouts, 408, 409, 429, 5xx), with a short backoff that counts against the same
deadline. httpx's timeouts are per network operation, so a server that trickles bytes
could outlast them; the attempts therefore run on a worker thread and the caller stops
waiting at the deadline whatever the socket is doing.

The SDKs are imported on first use, so the mock brain never pays for them.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import re
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from flock.brains.config import ProviderConfig, provider_config
from flock.brains.prompts import conversation, estimate_tokens, system_prompt
from flock.brains.types import BrainReply, BrainRequest

log = logging.getLogger("crows.brains")

_BACKOFF_S = 0.25
_BACKOFF_MAX_S = 2.0
# The last attempt is given a little less than what remains, so that its own, more
# specific error (a timeout, a refused connection) arrives before the caller gives up.
_DEADLINE_MARGIN_S = 0.05

_clients: dict[tuple[str, str, str], Any] = {}
_clients_lock = threading.Lock()


class BrainFailure(Exception):
    """One failed attempt: ``retryable`` says whether another attempt may help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class _ProviderBrain:
    provider = ""
    default_host = ""
    key_hint = ""

    def __init__(self, model: str) -> None:
        self.model = model

    # Subclasses: build the SDK client, and make one call returning (text, tokens_in, tokens_out).
    def _new_client(self, cfg: ProviderConfig) -> Any:
        raise NotImplementedError

    def _call(
        self,
        client: Any,
        request: BrainRequest,
        system: str,
        turns: list[dict[str, str]],
        timeout_s: float,
        cfg: ProviderConfig,
    ) -> tuple[str, int | None, int | None]:
        raise NotImplementedError

    def _classify(self, exc: Exception, timeout_s: float) -> BrainFailure:
        raise NotImplementedError

    def think(self, request: BrainRequest) -> BrainReply:
        started = time.perf_counter()
        try:
            cfg = provider_config(self.provider)
            if request.single_attempt:
                cfg = dataclasses.replace(cfg, retries=0)
            where = self._where(cfg)
            if not cfg.api_key:
                return self._fail(
                    started, f"{where}: no API key is set; set {cfg.key_sources} ({self.key_hint})"
                )
            if request.max_tokens <= 0:
                return self._fail(started, f"{where}: max_tokens must be positive, got {request.max_tokens}")
            system = system_prompt(request)
            turns = conversation(request)
            # Importing the SDK and building the client is local work (a second or so, once);
            # it is kept out of the network deadline below.
            client = self._client(cfg)
        except Exception as exc:  # noqa: BLE001 - think() never raises; the error is the reply
            return self._fail(
                started,
                f"{self.provider} brain ({self.model}): could not prepare the request "
                f"({type(exc).__name__}: {exc})",
            )
        budget_s = cfg.timeout_s * (cfg.retries + 1)
        deadline = time.perf_counter() + budget_s
        box: dict[str, Any] = {}
        worker = threading.Thread(
            target=self._attempts,
            args=(client, cfg, request, system, turns, deadline, box),
            name=f"brain-{self.provider}",
            daemon=True,
        )
        worker.start()
        worker.join(max(0.0, deadline - time.perf_counter()))
        if worker.is_alive() or "result" not in box:
            return self._fail(
                started,
                f"{where}: no answer within {budget_s:g} s "
                f"({cfg.retries + 1} attempt(s) of up to {cfg.timeout_s:g} s)",
            )
        result = box["result"]
        if isinstance(result, BrainFailure):
            return self._fail(started, f"{where}: {result}")
        text, tokens_in, tokens_out = result
        if tokens_in is None:
            tokens_in = estimate_tokens(system) + sum(estimate_tokens(t["content"]) for t in turns)
        if tokens_out is None:
            tokens_out = estimate_tokens(text)
        return BrainReply(
            ok=True,
            text=text,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            provider=self.provider,
            model=self.model,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )

    def _attempts(
        self,
        client: Any,
        cfg: ProviderConfig,
        request: BrainRequest,
        system: str,
        turns: list[dict[str, str]],
        deadline: float,
        box: dict[str, Any],
    ) -> None:
        """Try up to retries+1 times inside the deadline; leave the outcome in ``box``."""
        failure: BrainFailure | None = None
        attempts = 0
        try:
            for attempt in range(cfg.retries + 1):
                remaining = deadline - time.perf_counter() - _DEADLINE_MARGIN_S
                if remaining <= 0:
                    break
                timeout_s = min(cfg.timeout_s, remaining)
                attempts += 1
                try:
                    box["result"] = self._call(client, request, system, turns, timeout_s, cfg)
                    return
                except BrainFailure as exc:
                    failure = exc
                except Exception as exc:  # noqa: BLE001 - every SDK error is classified, none escapes
                    failure = self._classify(exc, cfg.timeout_s)
                if not failure.retryable or attempt == cfg.retries:
                    break
                pause = min(_BACKOFF_S * 2**attempt, _BACKOFF_MAX_S)
                if deadline - time.perf_counter() - pause < 0.1:
                    break
                time.sleep(pause)
        except Exception as exc:  # noqa: BLE001 - a worker thread must hand back, not die
            failure = BrainFailure(f"unexpected {type(exc).__name__}: {exc}", retryable=False)
        if failure is not None and attempts > 1:
            failure = BrainFailure(f"{failure} (gave up after {attempts} attempts)", retryable=False)
        box["result"] = failure or BrainFailure("no attempt fitted in the time allowed", retryable=False)

    def _client(self, cfg: ProviderConfig) -> Any:
        # One SDK client (one connection pool) per endpoint and key, shared by every crow.
        key = (self.provider, cfg.base_url, cfg.api_key)
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = self._new_client(cfg)
                _clients[key] = client
            return client

    def _where(self, cfg: ProviderConfig) -> str:
        # With no base URL set, the SDK falls back to its own environment variable, then its host.
        base = cfg.base_url or os.environ.get(f"{self.provider.upper()}_BASE_URL", "")
        host = (urlsplit(base).netloc or base) if base else self.default_host
        return f"{self.provider} brain ({self.model} at {host})"

    def _fail(self, started: float, error: str) -> BrainReply:
        return BrainReply.failed(
            error.rstrip(".") + ".",
            provider=self.provider,
            model=self.model,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )


def _status_failure(status: int, message: str) -> BrainFailure:
    detail = " ".join(str(message).split())[:300]
    if status == 401:
        return BrainFailure(f"the API key was rejected (HTTP 401: {detail})", retryable=False)
    if status == 403:
        return BrainFailure(f"access denied (HTTP 403: {detail})", retryable=False)
    if status == 404:
        return BrainFailure(f"model or endpoint not found (HTTP 404: {detail})", retryable=False)
    if status == 429:
        return BrainFailure(f"rate limited (HTTP 429: {detail})", retryable=True)
    retryable = status in (408, 409) or status >= 500
    return BrainFailure(f"the server answered HTTP {status}: {detail}", retryable=retryable)


def _error_message(exc: Any) -> str:
    """The provider's own error sentence from an SDK status error, without the SDK's prefix."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        inner: dict[Any, Any] = error if isinstance(error, dict) else body
        if isinstance(inner.get("message"), str) and inner["message"].strip():
            return inner["message"]
    message = str(getattr(exc, "message", "") or exc)
    return re.sub(r"^Error code: \d+ - ", "", message)


def _classify_sdk(sdk: Any, exc: Exception, timeout_s: float) -> BrainFailure:
    """Turn an openai or anthropic SDK exception (same class names in both) into a failure."""
    if isinstance(exc, sdk.APITimeoutError):
        return BrainFailure(f"timed out: no answer within {timeout_s:g} s", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f": {type(cause).__name__}: {cause}" if cause else ""
        return BrainFailure(f"could not connect{why}", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        return _status_failure(exc.status_code, _error_message(exc))
    if isinstance(exc, sdk.APIResponseValidationError):
        return BrainFailure(f"the response did not match the API's format ({exc})", retryable=False)
    return BrainFailure(f"an odd response ({type(exc).__name__}: {exc})", retryable=False)


def _usage_int(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None) if usage is not None else None
    return value if isinstance(value, int) and value >= 0 else None


class OpenAIBrain(_ProviderBrain):
    provider = "openai"
    default_host = "api.openai.com"
    key_hint = "a local server such as Ollama accepts any non-empty key"

    def _new_client(self, cfg: ProviderConfig) -> Any:
        import openai

        return openai.OpenAI(
            api_key=cfg.api_key, base_url=cfg.base_url or None, max_retries=0, timeout=cfg.timeout_s
        )

    def _call(
        self,
        client: Any,
        request: BrainRequest,
        system: str,
        turns: list[dict[str, str]],
        timeout_s: float,
        cfg: ProviderConfig,
    ) -> tuple[str, int | None, int | None]:
        # OpenAI's own API wants max_completion_tokens (its reasoning models reject
        # max_tokens); compatible servers (Ollama, llama.cpp, OpenRouter) know max_tokens.
        base = cfg.base_url or os.environ.get("OPENAI_BASE_URL", "")
        cap = "max_completion_tokens" if not base or "api.openai.com" in base else "max_tokens"
        response = client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, *turns],
            timeout=timeout_s,
            **{cap: request.max_tokens},
        )
        try:
            choice = response.choices[0]
            message = choice.message
            text = message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise BrainFailure(
                f"the response had no choices to read ({type(exc).__name__})", retryable=False
            ) from exc
        if not isinstance(text, str) or not text.strip():
            refusal = getattr(message, "refusal", None)
            if refusal:
                raise BrainFailure(f"the model refused: {refusal}", retryable=False)
            raise BrainFailure(
                f"the reply was empty (finish_reason={getattr(choice, 'finish_reason', None)})",
                retryable=False,
            )
        usage = getattr(response, "usage", None)
        return text.strip(), _usage_int(usage, "prompt_tokens"), _usage_int(usage, "completion_tokens")

    def _classify(self, exc: Exception, timeout_s: float) -> BrainFailure:
        import openai

        return _classify_sdk(openai, exc, timeout_s)


class AnthropicBrain(_ProviderBrain):
    provider = "anthropic"
    default_host = "api.anthropic.com"
    key_hint = "a gateway that needs none still wants a non-empty value"

    def _new_client(self, cfg: ProviderConfig) -> Any:
        import anthropic

        # This SDK sends the key as "Authorization: Bearer". Gateways and compatible servers
        # (LiteLLM, older proxies) often read only the classic x-api-key header, so a custom
        # base URL gets both; api.anthropic.com gets exactly what its own SDK sends.
        headers = {"x-api-key": cfg.api_key} if cfg.base_url else None
        return anthropic.Anthropic(
            api_key=cfg.api_key,
            base_url=cfg.base_url or None,
            max_retries=0,
            timeout=cfg.timeout_s,
            default_headers=headers,
        )

    def _call(
        self,
        client: Any,
        request: BrainRequest,
        system: str,
        turns: list[dict[str, str]],
        timeout_s: float,
        cfg: ProviderConfig,
    ) -> tuple[str, int | None, int | None]:
        response = client.messages.create(
            model=self.model,
            max_tokens=request.max_tokens,
            system=system,
            messages=turns,
            timeout=timeout_s,
        )
        try:
            blocks = list(response.content)
        except (AttributeError, TypeError) as exc:
            raise BrainFailure(
                f"the response had no content to read ({type(exc).__name__})", retryable=False
            ) from exc
        text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", "") == "text")
        if not text.strip():
            stop = getattr(response, "stop_reason", None)
            raise BrainFailure(f"the reply had no text (stop_reason={stop})", retryable=False)
        usage = getattr(response, "usage", None)
        return text.strip(), _usage_int(usage, "input_tokens"), _usage_int(usage, "output_tokens")

    def _classify(self, exc: Exception, timeout_s: float) -> BrainFailure:
        import anthropic

        return _classify_sdk(anthropic, exc, timeout_s)


_warmed: set[str] = set()


def warm_up(provider: str) -> None:
    """Import a provider's SDK on a background thread (once), so the first flight does not wait.

    The SDKs take one to a few seconds to import on a cold disk; ``get_brain`` calls this
    when it first builds a real brain, long before that brain usually flies.
    """
    if provider in _warmed or provider not in ("openai", "anthropic"):
        return
    _warmed.add(provider)

    def load() -> None:
        try:
            importlib.import_module(provider)
        except Exception:
            log.debug("could not import the %s SDK ahead of time", provider, exc_info=True)

    threading.Thread(target=load, name=f"brain-import-{provider}", daemon=True).start()


def reset_clients() -> None:
    """Close and forget every cached SDK client (tests, or after rotating a key)."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        try:
            client.close()
        except Exception:
            log.debug("could not close a %s client", type(client).__name__, exc_info=True)
