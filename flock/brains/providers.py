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
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from flock.brains.config import ProviderConfig, provider_config
from flock.brains.prompts import conversation, estimate_tokens, system_prompt
from flock.brains.registry import PROVIDERS
from flock.brains.types import BrainReply, BrainRequest

log = logging.getLogger("crows.brains")

_BACKOFF_S = 0.25
_BACKOFF_MAX_S = 2.0
# The last attempt is given a little less than what remains, so that its own, more
# specific error (a timeout, a refused connection) arrives before the caller gives up.
_DEADLINE_MARGIN_S = 0.05

_clients: dict[tuple[str, str, str], Any] = {}
_clients_lock = threading.Lock()


# The words of a reply that ran out of tokens before any text: a reasoning model that spent
# the whole cap thinking. Test connection reads them as "connected" (brains/probe.py).
OUT_OF_TOKENS = "used all its output tokens before writing any text"


class BrainFailure(Exception):
    """One failed attempt: ``retryable`` says whether another attempt may help; ``status``
    is the HTTP status the provider answered, if any; ``retry_after_s`` what its
    Retry-After asked for."""

    def __init__(
        self, message: str, *, retryable: bool, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s


class _ProviderBrain:
    """A brain speaking one wire format; `provider` names the registry's entry it calls
    (its key, base URL and host come from there), the format's own by default."""

    provider = ""
    key_hint = ""
    # What a 404 most often means with a custom base URL (the fix, in the owner's words).
    endpoint_hint = ""

    def __init__(self, model: str, *, provider: str = "") -> None:
        self.model = model
        if provider:
            self.provider = provider

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
            if request.timeout_s is not None:
                cfg = dataclasses.replace(cfg, timeout_s=max(0.01, min(cfg.timeout_s, request.timeout_s)))
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
            # it is kept out of the network deadline below, and out of the reply's latency.
            client = self._client(cfg)
            started = time.perf_counter()
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
            while True:
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
                # A rate limit is worth waiting out for as long as the deadline allows (a
                # small local server or a low-tier key refuses what is over its limit, and
                # lets it through a moment later); other failures get CROWS_BRAIN_RETRIES.
                rate_limited = failure.status == 429 and cfg.retries > 0
                if not failure.retryable or (attempts > cfg.retries and not rate_limited):
                    break
                pause = min(_BACKOFF_S * 2 ** (attempts - 1), _BACKOFF_MAX_S)
                if failure.retry_after_s is not None:
                    pause = max(pause, failure.retry_after_s)
                if deadline - time.perf_counter() - pause < 0.1:
                    if failure.retry_after_s is not None and failure.retry_after_s == pause:
                        failure = BrainFailure(
                            f"{failure}; it asked to wait {failure.retry_after_s:g} s, longer than the "
                            "time left", retryable=False, status=failure.status,
                        )
                    break
                time.sleep(pause)
        except Exception as exc:  # noqa: BLE001 - a worker thread must hand back, not die
            failure = BrainFailure(f"unexpected {type(exc).__name__}: {exc}", retryable=False)
        if failure is not None:
            failure = self._with_fix(failure, cfg, attempts)
        box["result"] = failure or BrainFailure("no attempt fitted in the time allowed", retryable=False)

    def _with_fix(self, failure: BrainFailure, cfg: ProviderConfig, attempts: int) -> BrainFailure:
        """The failure's sentence, with the attempts made and the setting that fixes it."""
        message = str(failure)
        if attempts > 1:
            message += f" (gave up after {attempts} attempts)"
        if failure.status == 401:
            message += f"; the key came from {cfg.key_source}"
        elif failure.status == 404 and cfg.base_url and self.endpoint_hint:
            message += f"; check the model's name, and {self.endpoint_hint}"
        elif failure.status == 429:
            message += (
                "; fewer crows in the air at once (CROWS_MAX_IN_FLIGHT) or a longer "
                "CROWS_BRAIN_TIMEOUT_S gives the provider room"
            )
        return BrainFailure(message, retryable=False, status=failure.status)

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
        base = cfg.base_url or os.environ.get(PROVIDERS[self.provider].env_base_url, "")
        host = (urlsplit(base).netloc or base) if base else PROVIDERS[self.provider].default_host
        return f"{self.provider} brain ({self.model} at {host})"

    def _fail(self, started: float, error: str) -> BrainReply:
        # The flight log and the room say it too; the server's log is where an operator
        # looks first when every crow goes quiet.
        log.warning("%s", error)
        return BrainReply.failed(
            error.rstrip(".") + ".",
            provider=self.provider,
            model=self.model,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )


def _status_failure(status: int, message: str, *, url: str = "", retry_after_s: float | None = None) -> BrainFailure:
    detail = " ".join(str(message).split())[:300]
    if status == 401:
        return BrainFailure(f"the API key was rejected (HTTP 401: {detail})", retryable=False, status=status)
    if status == 403:
        return BrainFailure(f"access denied (HTTP 403: {detail})", retryable=False, status=status)
    if status == 404:
        at = f" at {url}" if url else ""
        return BrainFailure(f"model or endpoint not found (HTTP 404{at}: {detail})", retryable=False, status=status)
    if status == 429:
        return BrainFailure(f"rate limited (HTTP 429: {detail})", retryable=True, status=status,
                            retry_after_s=retry_after_s)
    retryable = status in (408, 409) or status >= 500
    return BrainFailure(f"the server answered HTTP {status}: {detail}", retryable=retryable, status=status,
                        retry_after_s=retry_after_s if retryable else None)


def _not_the_api(why: str) -> BrainFailure:
    return BrainFailure(
        f"the server's answer was not the API's JSON ({why}): is the base URL the API's root, and not a web page?",
        retryable=False,
    )


def _out_of_tokens(request: BrainRequest, why: str) -> BrainFailure:
    return BrainFailure(
        f"the model {OUT_OF_TOKENS} ({request.max_tokens}; {why}): a reasoning model thinks first, and needs "
        "room for it",
        retryable=False,
    )


def _retry_after_s(response: Any) -> float | None:
    """What a response's Retry-After (or OpenAI's retry-after-ms) asks for, in seconds."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(ms) / 1000.0)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = parsedate_to_datetime(value)
            return max(0.0, (when - datetime.now(when.tzinfo or UTC)).total_seconds())
    except (TypeError, ValueError, OverflowError):
        return None


def _request_url(response: Any) -> str:
    try:
        return str(response.request.url)
    except Exception:  # noqa: BLE001 - the URL only decorates the message
        return ""


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
        return BrainFailure(f"timed out: no answer within {timeout_s:g} s (CROWS_BRAIN_TIMEOUT_S)", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f": {type(cause).__name__}: {cause}" if cause else ""
        return BrainFailure(f"could not connect{why}", retryable=True)
    if isinstance(exc, sdk.APIStatusError):
        response = getattr(exc, "response", None)
        return _status_failure(
            exc.status_code, _error_message(exc), url=_request_url(response), retry_after_s=_retry_after_s(response)
        )
    if isinstance(exc, sdk.APIResponseValidationError):
        return BrainFailure(f"the response did not match the API's format ({exc})", retryable=False)
    return BrainFailure(f"an odd response ({type(exc).__name__}: {exc})", retryable=False)


def _usage_int(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None) if usage is not None else None
    return value if isinstance(value, int) and value >= 0 else None


class OpenAIBrain(_ProviderBrain):
    provider = "openai"
    key_hint = "a local server such as Ollama accepts any non-empty key"
    endpoint_hint = "that CROWS_OPENAI_BASE_URL is the API's root, usually ending in /v1 (Ollama: http://localhost:11434/v1)"

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
        base = cfg.base_url or os.environ.get(PROVIDERS[self.provider].env_base_url, "")
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
            raise _not_the_api("no choices in it") from exc
        if not isinstance(text, str) or not text.strip():
            refusal = getattr(message, "refusal", None)
            if refusal:
                raise BrainFailure(f"the model refused: {refusal}", retryable=False)
            finish = getattr(choice, "finish_reason", None)
            if finish == "length":
                raise _out_of_tokens(request, "finish_reason=length")
            raise BrainFailure(f"the reply was empty (finish_reason={finish})", retryable=False)
        usage = getattr(response, "usage", None)
        return text.strip(), _usage_int(usage, "prompt_tokens"), _usage_int(usage, "completion_tokens")

    def _classify(self, exc: Exception, timeout_s: float) -> BrainFailure:
        import openai

        return _classify_sdk(openai, exc, timeout_s)


class AnthropicBrain(_ProviderBrain):
    provider = "anthropic"
    key_hint = "a gateway that needs none still wants a non-empty value"
    endpoint_hint = "that CROWS_ANTHROPIC_BASE_URL is the API's root, without /v1 (the SDK adds /v1/messages)"

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
            raise _not_the_api("no content in it") from exc
        text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", "") == "text")
        if not text.strip():
            stop = getattr(response, "stop_reason", None)
            if stop == "max_tokens":
                raise _out_of_tokens(request, "stop_reason=max_tokens")
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
    known = PROVIDERS.get(provider)
    if provider in _warmed or known is None or not known.remote:
        return
    _warmed.add(provider)

    def load() -> None:
        try:
            importlib.import_module(known.sdk)
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
