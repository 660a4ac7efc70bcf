"""A real SSE client over a socket (httpx), reading frames as a browser's EventSource would."""

from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Frame:
    id: int | None
    event: str
    data: dict[str, Any] | None
    comment: str = ""


class SSEClient:
    """Connects in a background thread and queues every frame (and comment) it reads."""

    def __init__(
        self, url: str, *, last_event_id: int | None = None, timeout: float = 30, headers: dict[str, str] | None = None
    ) -> None:
        self.url = url
        self.headers = {"Accept": "text/event-stream", **(headers or {})}
        if last_event_id is not None:
            self.headers["Last-Event-ID"] = str(last_event_id)
        self.frames: queue.Queue[Frame] = queue.Queue()
        self.status: int | None = None
        self.body_on_error = b""
        self.connected = threading.Event()
        self.closed = threading.Event()
        self._stop = threading.Event()
        self._timeout = timeout
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self.connected.wait(timeout):
            raise TimeoutError(f"SSE connect to {url} timed out")

    def _run(self) -> None:
        try:
            with httpx.Client(timeout=httpx.Timeout(self._timeout, read=None)) as client:
                with client.stream("GET", self.url, headers=self.headers) as response:
                    self._response = response
                    self.status = response.status_code
                    if response.status_code != 200:
                        self.body_on_error = response.read()
                        self.connected.set()
                        return
                    self.connected.set()
                    self._read(response)
        except Exception:
            pass
        finally:
            self.connected.set()
            self.closed.set()

    def _read(self, response: httpx.Response) -> None:
        event_id: int | None = None
        name = "message"
        data: list[str] = []
        for line in response.iter_lines():
            if self._stop.is_set():
                return
            if line == "":
                if data:
                    self.frames.put(Frame(event_id, name, json.loads("\n".join(data))))
                event_id, name, data = None, "message", []
                continue
            if line.startswith(":"):
                self.frames.put(Frame(None, "", None, comment=line[1:].strip()))
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "id":
                event_id = int(value)
            elif field == "event":
                name = value
            elif field == "data":
                data.append(value)

    def events(self, count: int, timeout: float = 10) -> list[Frame]:
        """The next `count` event frames (comments skipped)."""
        got: list[Frame] = []
        while len(got) < count:
            frame = self.frames.get(timeout=timeout)
            if frame.id is not None:
                got.append(frame)
        return got

    def drain(self, quiet: float = 0.5) -> list[Frame]:
        """Every event frame that arrives until the stream is quiet for `quiet` seconds."""
        got: list[Frame] = []
        while True:
            try:
                frame = self.frames.get(timeout=quiet)
            except queue.Empty:
                return got
            if frame.id is not None:
                got.append(frame)

    def wait_for(self, predicate, timeout: float = 15) -> Frame:
        import time

        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no matching SSE frame arrived")
            frame = self.frames.get(timeout=left)
            if frame.id is not None and predicate(frame):
                return frame

    def close(self) -> None:
        """Hang up: closes the socket, as a browser tab that goes away does."""
        self._stop.set()
        response = getattr(self, "_response", None)
        if response is not None:
            try:
                stream = response.extensions.get("network_stream")
                if stream is not None:
                    stream.get_extra_info("socket").shutdown(2)
            except Exception:
                pass
            try:
                response.close()
            except Exception:
                pass
        self.closed.wait(5)
