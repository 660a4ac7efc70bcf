"""How much a stream has written that its client has not taken yet (docs/STREAM.md,
"Slow readers").

ASGI gives an application no back-pressure under daphne: `send` hands the bytes to
Twisted, whose transport keeps every byte the socket has not accepted, without limit. A
client that never reads would make the server hold a copy of the whole replay. So the
stream asks the transport itself how many bytes wait, through the `send` callable daphne
gave the application (a `functools.partial` over its request object). Under a server
whose transport cannot be found (uvicorn applies flow control in `send` itself), the
answer is None and the stream writes as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any

log = logging.getLogger("crows.stream")


def _find_transport(send: Any) -> Any | None:
    for arg in getattr(send, "args", ()):
        channel = getattr(arg, "channel", None)
        transport = getattr(channel, "transport", None)
        # Wrappers (TLS, policies) keep the socket's transport one level further down.
        for _ in range(4):
            if transport is None or hasattr(transport, "_tempDataLen"):
                break
            transport = getattr(transport, "transport", None)
        if transport is not None and hasattr(transport, "_tempDataLen"):
            return transport
    return None


class Flow:
    """The unflushed bytes of one stream's connection, when the server lets us see them."""

    def __init__(self, send: Any) -> None:
        self.transport = _find_transport(send)

    @property
    def known(self) -> bool:
        return self.transport is not None

    def unflushed(self) -> int:
        t = self.transport
        if t is None:
            return 0
        try:
            return len(t.dataBuffer) - t.offset + t._tempDataLen
        except AttributeError:  # a Twisted that keeps its buffer differently
            self.transport = None
            return 0

    def abort(self) -> None:
        """Drop the connection and everything buffered for it at once (a graceful close
        would wait for a client that does not read to take the buffer first)."""
        if self.transport is not None:
            try:
                self.transport.abortConnection()
            except Exception:
                log.debug("aborting a stream's connection failed", exc_info=True)


_libc: Any = None


def give_memory_back() -> None:
    """Ask glibc to hand freed heap pages back to the system. The buffers of closed slow
    clients are freed by Python, but glibc keeps the pages for reuse unless asked, so the
    process would stay at its peak size (docs/PERFORMANCE.md, "Slow readers")."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else False
        except OSError:
            _libc = False
    trim = getattr(_libc, "malloc_trim", None) if _libc else None
    if trim is not None:
        trim(0)
