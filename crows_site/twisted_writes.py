"""Twisted's TCP writes, sent at once when nothing is queued before them.

Twisted's `FileDescriptor.write` never sends: it queues the bytes, asks the reactor to
watch the socket for writability (`startWriting`), and sends on the loop's next turn in
`doWrite`, which then stops watching (`stopWriting`). Under daphne's asyncio reactor
each of those is a `loop.add_writer` / `loop.remove_writer`: an `epoll_ctl` system call
and a new selector key, twice per write. An SSE frame is one write per subscriber, so
with a hundred subscribers one event paid for two hundred of each plus a hundred
callbacks on the next turn; py-spy put about 70 % of the event loop's fan-out time in
that write path (docs/PERFORMANCE.md).

asyncio's own transports try `send()` first and only watch the socket for what the
kernel would not take. This does the same for Twisted's TCP connections: when nothing is
queued ahead of the bytes (so their order is kept), it sends them now and queues only the
rest, through Twisted's own `write`, which then watches the socket as before. Everything
else falls back to Twisted unchanged: a connection closing or half-closed, a pull
producer (it is resumed from `doWrite`, which would no longer run), a lost connection
(the queued path finds out on the next `doWrite`, as it always did).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

log = logging.getLogger("crows.server")

# What the patch reads of Twisted's FileDescriptor (Twisted 26.10, pinned). An upgrade that
# renames any of them leaves Twisted's writes alone, with a warning, rather than failing
# every response.
_STATE = (
    "connected", "disconnecting", "_writeDisconnecting", "_writeDisconnected",
    "_tempDataBuffer", "offset", "dataBuffer", "producer", "streamingProducer",
)

_installed = False


def _nothing_queued(conn: Any) -> bool:
    return (
        conn.connected
        and not conn.disconnecting
        and not conn._writeDisconnecting
        and not conn._writeDisconnected
        and not conn._tempDataBuffer
        and conn.offset == len(conn.dataBuffer)
        and (conn.producer is None or conn.streamingProducer)
    )


def send_queued_writes_at_once() -> bool:
    """Patch Twisted's TCP connections (servers and clients) in this process; idempotent.
    False (and Twisted unchanged) when Twisted's internals are not the ones this knows."""
    global _installed
    if _installed:
        return True
    from twisted.internet import abstract, tcp

    # A bare descriptor on a stand-in reactor (a real one must not be imported here: daphne
    # installs its own) has the instance attributes __init__ sets, beside the class's.
    probe = abstract.FileDescriptor(reactor=object())  # type: ignore[arg-type]
    missing = [name for name in _STATE if not hasattr(probe, name)]
    if missing or not hasattr(abstract, "_dataMustBeBytes"):
        log.warning("Twisted's writes stay queued: this Twisted lacks %s", missing or "_dataMustBeBytes")
        return False

    queue_write = tcp.Connection.write
    queue_sequence = tcp.Connection.writeSequence
    must_be_bytes = abstract._dataMustBeBytes

    def send_now(self: Any, data: bytes) -> None:
        """Send checked bytes with nothing queued ahead; queue what the kernel left."""
        sent = self.writeSomeData(data)
        # An int is what the kernel took (0 when it would block); anything else is the
        # connection lost, which the queued path reports as it always has.
        if isinstance(sent, int) and sent > 0:
            if sent >= len(data):
                return
            data = data[sent:]
        queue_write(self, data)

    def write(self: Any, data: bytes) -> None:
        must_be_bytes(data)
        if data and _nothing_queued(self):
            send_now(self, data)
        else:
            queue_write(self, data)

    def write_sequence(self: Any, iovec: Iterable[bytes]) -> None:
        chunks = list(iovec)
        if chunks and _nothing_queued(self):
            for chunk in chunks:
                must_be_bytes(chunk)
            data = b"".join(chunks)
            if data:
                send_now(self, data)
            return
        queue_sequence(self, chunks)

    tcp.Connection.write = write  # type: ignore[method-assign]
    tcp.Connection.writeSequence = write_sequence  # type: ignore[method-assign]
    _installed = True
    return True
