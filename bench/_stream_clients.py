"""Cheap load clients for bench/stream.py: raw asyncio sockets, no HTTP library.

Thousands of SSE clients share one event loop with the poster, so each does as little as
it can: it searches the bytes it receives for the marker the bench is waiting for (or
counts frame starts), and records the arrival time; it never parses frames.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

HOST = "127.0.0.1"
FRAME_START = b"\nevent: "  # every frame is `id: N\nevent: NAME\ndata: ...`; comments are not
TAIL = 256  # bytes kept from the previous chunk, so a marker split across reads is still seen


class Watch:
    """What a set of SSE clients is waiting for: one marker at a time."""

    def __init__(self) -> None:
        self.marker: bytes | None = None
        self.arrivals: dict[int, float] = {}
        self.expected = 0
        self.done: asyncio.Future[None] | None = None

    def arm(self, marker: bytes, expected: int) -> None:
        self.marker = marker
        self.arrivals = {}
        self.expected = expected
        self.done = asyncio.get_running_loop().create_future()

    def hit(self, idx: int, when: float) -> None:
        if idx in self.arrivals:
            return
        self.arrivals[idx] = when
        if len(self.arrivals) >= self.expected and self.done is not None and not self.done.done():
            self.done.set_result(None)

    def disarm(self) -> dict[int, float]:
        self.marker = None
        return self.arrivals


class SSEClient(asyncio.Protocol):
    def __init__(self, idx: int, request: bytes, watch: Watch | None = None, count_target: int = 0) -> None:
        loop = asyncio.get_running_loop()
        self.idx = idx
        self.request = request
        self.watch = watch
        self.ready: asyncio.Future[int] = loop.create_future()  # the HTTP status
        self.lost: asyncio.Future[None] = loop.create_future()
        self.transport: asyncio.Transport | None = None
        self.head = b""
        self.tail = b""
        self.frames = 0
        self.count_target = count_target
        self.counted: asyncio.Future[float] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if not self.ready.done():
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            status_line = self.head.split(b"\r\n", 1)[0]
            try:
                status = int(status_line.split()[1])
            except (IndexError, ValueError):
                status = -1
            if status != 200:
                self.ready.set_result(status)
                return
            if b": connected" not in self.head and FRAME_START not in self.head:
                return  # headers alone; the preamble (or a first frame) makes the stream ready
            self.ready.set_result(200)
            data, self.head = self.head[end + 4 :], b""
        buf = self.tail + data
        watch = self.watch
        if watch is not None and watch.marker is not None and watch.marker in buf:
            watch.hit(self.idx, now)
        if self.count_target:
            self.frames += buf.count(FRAME_START) - self.tail.count(FRAME_START)
            if self.frames >= self.count_target and not self.counted.done():
                self.counted.set_result(now)
        self.tail = buf[-TAIL:]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ready.done():
            self.ready.set_exception(ConnectionError(f"closed before the stream started: {exc}"))
        if not self.lost.done():
            self.lost.set_result(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.abort()


def get_request(port: int, path: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nAccept: text/event-stream\r\n"
        "Cache-Control: no-cache\r\n\r\n"
    ).encode()


async def open_sse(
    port: int, path: str, idx: int = 0, watch: Watch | None = None, count_target: int = 0, timeout: float = 30
) -> SSEClient:
    loop = asyncio.get_running_loop()
    request = get_request(port, path)
    _, client = await asyncio.wait_for(
        loop.create_connection(lambda: SSEClient(idx, request, watch, count_target), HOST, port), timeout
    )
    try:
        status = await asyncio.wait_for(client.ready, timeout)
    except BaseException:
        client.close()
        raise
    if status != 200:
        client.close()
        raise ConnectionError(f"GET {path} answered {status}")
    return client


async def open_many(
    port: int,
    path: str,
    n: int,
    *,
    watch: Watch | None = None,
    first_idx: int = 0,
    concurrency: int = 48,
    timeout: float = 60,
) -> tuple[list[SSEClient], list[BaseException]]:
    """Open n streams, at most `concurrency` connecting at once (daphne's listen backlog is 50)."""
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> SSEClient:
        async with sem:
            return await open_sse(port, path, first_idx + i, watch, timeout=timeout)

    results = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    ok = [r for r in results if isinstance(r, SSEClient)]
    errors = [r for r in results if isinstance(r, BaseException)]
    return ok, errors


async def close_all(clients: Sequence[SSEClient], settle: float = 0.5) -> None:
    for client in clients:
        client.close()
    await asyncio.sleep(settle)


class Poster:
    """One keep-alive HTTP/1.1 connection that POSTs JSON and reads the whole answer."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(HOST, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.transport.abort()
        self.reader = self.writer = None

    async def post(self, path: str, body: bytes, timeout: float = 30) -> int:
        return await asyncio.wait_for(self._post(path, body), timeout)

    async def _post(self, path: str, body: bytes) -> int:
        if self.writer is None:
            await self._connect()
        assert self.reader is not None and self.writer is not None
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {HOST}:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip().lower()
        if "content-length" in headers:
            await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                await self.reader.readexactly(size + 2)
                if size == 0:
                    break
        else:  # no length: the body ends with the connection
            await self.reader.read()
            self.close()
        if headers.get("connection") == "close":
            self.close()
        return status


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * p // 100)))
    return ordered[int(rank) - 1]
