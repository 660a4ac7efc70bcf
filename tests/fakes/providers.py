"""Fake LLM providers: real HTTP servers on 127.0.0.1 speaking OpenAI's and Anthropic's wire formats.

Each fake is a ``ThreadingHTTPServer`` on an ephemeral port, run in a thread. It checks
every request the way the real service would (path, auth headers, JSON body shape) and
records both the request and any ``problems`` with it, then answers according to its
``behaviour``:

``ok``          a realistic success body with usage
``error``       HTTP 500 with the provider's error body
``unauthorized`` HTTP 401 with the provider's error body
``slow``        waits ``delay_s`` before a success (the client should time out first)
``malformed``   HTTP 200, JSON content type, a body cut off mid-object
``empty``       HTTP 200, a well-formed body whose reply text is empty
``odd``         HTTP 200, valid JSON of the wrong shape
``no_usage``    a success without the ``usage`` object (some compatible servers omit it)
``rate_limited`` HTTP 429 with the provider's error body and ``Retry-After: <retry_after>``
``not_found``   HTTP 404 with the provider's unknown-model error body
``thinking``    HTTP 200, no text: a reasoning model that spent max_tokens thinking
                (finish_reason ``length`` / stop_reason ``max_tokens``)
``html``        HTTP 200 with an HTML page (a base URL that points at a web UI)

``script`` (a list of behaviours) overrides ``behaviour`` for successive requests, so a
test can answer 500 then 200. The fakes are used through the fixtures at the bottom.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def _words_to_tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 1.3))


class FakeProvider:
    """The shared machinery; subclasses supply the wire format."""

    name = ""
    api_key = "sk-test-crows-0000"

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.problems: list[str] = []
        self.behaviour = "ok"
        self.script: list[str] = []
        self.reply_text = "Back from the far field. Here is the answer."
        self.delay_s = 5.0
        self.retry_after = "1"
        self.last_usage: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # Wire format: the path served, request checks, and the bodies of each answer.
    path = ""

    def check(self, headers: dict[str, str], body: Any) -> list[str]:
        raise NotImplementedError

    def success(self, body: dict[str, Any], text: str, *, usage: bool = True) -> dict[str, Any]:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def out_of_tokens(self, body: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        raise NotImplementedError

    # Server lifecycle.
    def start(self) -> FakeProvider:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; without this, Nagle's algorithm and the
            # client's delayed ACK add ~40 ms to every keep-alive answer.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                fake._handle(self)

            def do_GET(self) -> None:
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-{self.name}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def _next_behaviour(self) -> str:
        with self._lock:
            return self.script.pop(0) if self.script else self.behaviour

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = handler.path.split("?", 1)[0]
        with self._lock:
            self.requests.append(Recorded(handler.command, path, headers, body, time.monotonic()))
        problems = []
        if handler.command != "POST":
            problems.append(f"method {handler.command}, expected POST")
        if path != self.path:
            problems.append(f"path {path!r}, expected {self.path!r}")
        if not headers.get("content-type", "").startswith("application/json"):
            problems.append(f"content-type {headers.get('content-type')!r}, expected application/json")
        if not isinstance(body, dict):
            problems.append("the body is not a JSON object")
        else:
            problems += self.check(headers, body)
        if problems:
            with self._lock:
                self.problems += problems
            self._send(handler, Answer(400, json.dumps(self.error_body(400, "; ".join(problems))).encode()))
            return
        self._send(handler, self._answer(self._next_behaviour(), body))

    def _answer(self, behaviour: str, body: dict[str, Any]) -> Answer:
        if behaviour == "error":
            return Answer(500, json.dumps(self.error_body(500, "")).encode())
        if behaviour == "unauthorized":
            return Answer(401, json.dumps(self.error_body(401, "")).encode())
        if behaviour == "slow":
            # Wakes early when the fake stops, so no handler thread outlives its test by much.
            self._closing.wait(self.delay_s)
            return Answer(200, json.dumps(self.success(body, self.reply_text)).encode())
        if behaviour == "malformed":
            return Answer(200, b'{"id": "cut-off", "choices": [{"index": 0, "message": {"role": "assist')
        if behaviour == "empty":
            return Answer(200, json.dumps(self.success(body, "")).encode())
        if behaviour == "odd":
            return Answer(200, json.dumps({"hello": "crows", "status": "fine"}).encode())
        if behaviour == "no_usage":
            return Answer(200, json.dumps(self.success(body, self.reply_text, usage=False)).encode())
        if behaviour == "rate_limited":
            return Answer(429, json.dumps(self.error_body(429, "")).encode(), {"retry-after": self.retry_after})
        if behaviour == "not_found":
            return Answer(404, json.dumps(self.error_body(404, str(body.get("model")))).encode())
        if behaviour == "thinking":
            return Answer(200, json.dumps(self.out_of_tokens(body)).encode())
        if behaviour == "html":
            page = b"<!doctype html><html><body><h1>Open WebUI</h1></body></html>"
            return Answer(200, page, {"content-type": "text/html; charset=utf-8"})
        return Answer(200, json.dumps(self.success(body, self.reply_text)).encode())

    def _send(self, handler: BaseHTTPRequestHandler, answer: Answer) -> None:
        try:
            handler.send_response(answer.status)
            if "content-type" not in answer.headers:
                handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(answer.body)))
            for k, v in answer.headers.items():
                handler.send_header(k, v)
            handler.end_headers()
            handler.wfile.write(answer.body)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            # The client gave up (a timeout test): nothing to answer to.
            pass

    def usage_for(self, body: dict[str, Any], text: str) -> tuple[int, int]:
        prompt = json.dumps(body.get("messages", [])) + str(body.get("system", ""))
        usage = (_words_to_tokens(prompt), _words_to_tokens(text) if text else 0)
        self.last_usage = usage
        return usage


class FakeOpenAI(FakeProvider):
    """POST /v1/chat/completions with Authorization: Bearer <key>."""

    name = "openai"
    path = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def check(self, headers: dict[str, str], body: Any) -> list[str]:
        problems = []
        if headers.get("authorization") != f"Bearer {self.api_key}":
            problems.append(f"authorization {headers.get('authorization')!r}, expected the Bearer key")
        if not isinstance(body.get("model"), str) or not body["model"]:
            problems.append("model missing")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            problems.append("messages missing or empty")
        else:
            for m in messages:
                if not isinstance(m, dict) or m.get("role") not in (
                    "system",
                    "developer",
                    "user",
                    "assistant",
                ):
                    problems.append(f"bad message {m!r}")
                elif not isinstance(m.get("content"), str) or not m["content"]:
                    problems.append(f"message without text content: {m!r}")
            if messages and isinstance(messages[0], dict) and messages[0].get("role") != "system":
                problems.append("the first message is not the system prompt")
        cap = body.get("max_tokens", body.get("max_completion_tokens"))
        if not isinstance(cap, int) or cap <= 0:
            problems.append("max_tokens / max_completion_tokens missing or not a positive integer")
        if body.get("stream"):
            problems.append("stream requested; the brains read whole responses")
        return problems

    def success(self, body: dict[str, Any], text: str, *, usage: bool = True) -> dict[str, Any]:
        prompt_tokens, completion_tokens = self.usage_for(body, text)
        reply: dict[str, Any] = {
            "id": f"chatcmpl-fake{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "service_tier": "default",
            "system_fingerprint": "fp_crows_fake",
        }
        if usage:
            reply["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            }
        return reply

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kinds = {
            400: ("invalid_request_error", message or "Invalid request."),
            401: (
                "invalid_request_error",
                (
                    "Incorrect API key provided: sk-wrong. You can find your "
                    "API key at https://platform.openai.com/account/api-keys."
                ),
            ),
            404: ("invalid_request_error", f"The model `{message}` does not exist or you do not have access to it."),
            429: ("requests", "Rate limit reached for requests. Please try again in 1s."),
            500: ("server_error", "The server had an error while processing your request. Sorry about that!"),
        }
        kind, text = kinds.get(status, ("server_error", message or "error"))
        codes = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}
        return {"error": {"message": text, "type": kind, "param": None, "code": codes.get(status)}}

    def out_of_tokens(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.success(body, "")
        reply["choices"][0]["finish_reason"] = "length"
        return reply


class FakeAnthropic(FakeProvider):
    """POST /v1/messages with x-api-key and anthropic-version."""

    name = "anthropic"
    path = "/v1/messages"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def check(self, headers: dict[str, str], body: Any) -> list[str]:
        problems = []
        # The Messages API takes the key as x-api-key or, as anthropic SDK 2.x sends it, as a
        # Bearer token; a request must carry it one way or the other.
        if self.api_key not in (
            headers.get("x-api-key"),
            headers.get("authorization", "").removeprefix("Bearer "),
        ):
            problems.append(
                f"x-api-key {headers.get('x-api-key')!r} / authorization "
                f"{headers.get('authorization')!r}: neither carries the key"
            )
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", headers.get("anthropic-version", "")):
            problems.append(f"anthropic-version {headers.get('anthropic-version')!r} is not a dated version")
        if not isinstance(body.get("model"), str) or not body["model"]:
            problems.append("model missing")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] <= 0:
            problems.append("max_tokens missing or not a positive integer")
        if "system" in body and not isinstance(body["system"], (str, list)):
            problems.append("system is neither a string nor a list of blocks")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            problems.append("messages missing or empty")
        else:
            for i, m in enumerate(messages):
                if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
                    problems.append(f"bad message {m!r} (system belongs in the top-level system field)")
                elif not m.get("content"):
                    problems.append(f"message {i} has no content")
            if isinstance(messages[0], dict) and messages[0].get("role") != "user":
                problems.append("the first message is not from the user")
        if body.get("stream"):
            problems.append("stream requested; the brains read whole responses")
        return problems

    def success(self, body: dict[str, Any], text: str, *, usage: bool = True) -> dict[str, Any]:
        input_tokens, output_tokens = self.usage_for(body, text)
        reply: dict[str, Any] = {
            "id": f"msg_01Fake{len(self.requests):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "unknown"),
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": "end_turn",
            "stop_sequence": None,
        }
        if usage:
            reply["usage"] = {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "service_tier": "standard",
            }
        return reply

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kinds = {
            400: ("invalid_request_error", message or "Invalid request."),
            401: ("authentication_error", "invalid x-api-key"),
            404: ("not_found_error", f"model: {message}"),
            429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            500: ("api_error", "Internal server error"),
        }
        kind, text = kinds.get(status, ("api_error", message or "error"))
        return {"type": "error", "error": {"type": kind, "message": text}, "request_id": "req_fake"}

    def out_of_tokens(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.success(body, "")
        reply["stop_reason"] = "max_tokens"
        return reply


def unused_port_number() -> int:
    """A loopback port nothing listens on (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture
def anthropic_fake() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic().start()
    yield fake
    fake.stop()


@pytest.fixture
def unused_port() -> int:
    return unused_port_number()
