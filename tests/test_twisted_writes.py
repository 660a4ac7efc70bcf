"""crows_site/twisted_writes.py: a TCP write with nothing queued ahead goes out at once;
anything the kernel will not take, or any write behind queued bytes, takes Twisted's
queued path, in order."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from twisted.internet import tcp
from twisted.internet.protocol import Protocol

from crows_site import twisted_writes
from crows_site.twisted_writes import send_queued_writes_at_once

# Installed as crows_site.asgi installs it; False would mean this Twisted's internals
# changed and the patch stood down (the pinned Twisted must keep it on).
assert send_queued_writes_at_once()


class Reactor:
    """Records what the connection asks the reactor to watch."""

    def __init__(self) -> None:
        self.watched: list[Any] = []

    def addWriter(self, fd: Any) -> None:  # noqa: N802 (Twisted's interface)
        self.watched.append(fd)

    def removeWriter(self, fd: Any) -> None:  # noqa: N802
        self.watched.remove(fd)

    def addReader(self, fd: Any) -> None:  # noqa: N802
        pass

    def removeReader(self, fd: Any) -> None:  # noqa: N802
        pass


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    reactor = Reactor()
    conn = tcp.Connection(ours, Protocol(), reactor)  # type: ignore[arg-type]
    conn.connected = True
    theirs.settimeout(2)
    yield conn, theirs, reactor
    ours.close()
    theirs.close()


def read_all(sock: socket.socket, size: int) -> bytes:
    got = b""
    while len(got) < size:
        got += sock.recv(size - len(got))
    return got


def test_a_write_with_nothing_queued_is_sent_at_once_without_watching_the_socket(pair):
    conn, theirs, reactor = pair
    conn.write(b"data: one\n\n")
    conn.writeSequence([b"data: ", b"two\n\n"])
    assert read_all(theirs, 22) == b"data: one\n\ndata: two\n\n"
    assert reactor.watched == []


def test_what_the_kernel_will_not_take_is_queued_and_everything_arrives_in_order(pair):
    conn, theirs, reactor = pair
    big = bytes(range(256)) * 40_000  # 10 MB: more than the socket buffers hold
    conn.write(big)
    assert reactor.watched == [conn]  # the rest waits for writability
    conn.write(b"tail")  # behind queued bytes: queued too, never sent ahead of them
    received = b""
    while len(received) < len(big) + 4:
        received += theirs.recv(1 << 20)
        if reactor.watched:
            conn.doWrite()  # what the reactor does when the socket can take more
    assert received == big + b"tail"
    assert reactor.watched == []  # drained: Twisted stops watching


def test_a_pull_producer_keeps_twisteds_queued_path(pair):
    conn, theirs, reactor = pair

    class Pull:
        def resumeProducing(self) -> None:  # noqa: N802
            pass

        def stopProducing(self) -> None:  # noqa: N802
            pass

    conn.registerProducer(Pull(), False)
    conn.write(b"queued")
    assert reactor.watched == [conn]
    conn.doWrite()
    assert read_all(theirs, 6) == b"queued"


def test_a_closing_connection_keeps_twisteds_queued_path(pair):
    conn, _theirs, reactor = pair
    conn.disconnecting = True
    conn.write(b"late")
    assert reactor.watched == [conn]


def test_non_bytes_are_refused_as_twisted_refuses_them(pair):
    conn, _theirs, _reactor = pair
    with pytest.raises(TypeError):
        conn.write("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        conn.writeSequence([b"ok", "text"])  # type: ignore[list-item]


def test_a_twisted_without_the_state_it_reads_is_left_alone(monkeypatch):
    monkeypatch.setattr(twisted_writes, "_installed", False)
    monkeypatch.setattr(twisted_writes, "_STATE", (*twisted_writes._STATE, "_renamedBuffer"))
    write = tcp.Connection.write
    assert send_queued_writes_at_once() is False
    assert tcp.Connection.write is write
