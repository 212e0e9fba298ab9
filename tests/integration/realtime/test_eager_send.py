"""Daphne's TCP connections send a write at once when nothing of theirs waits
(:mod:`apps.realtime.eager_send`), over a real socket pair: Twisted's connection on one end,
a plain socket reading on the other. No reactor runs here: what Twisted's path would send
later is sent by calling the connection's ``doWrite``, as the reactor does when the socket is
writable."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from twisted.internet import main, reactor, tcp
from twisted.internet.interfaces import IPullProducer
from twisted.internet.protocol import Protocol
from zope.interface import implementer

from apps.realtime import eager_send


@pytest.fixture
def pair() -> Iterator[tuple[tcp.Connection, socket.socket]]:
    ours, peer = socket.socketpair()
    connection = tcp.Connection(ours, Protocol(), reactor)
    connection.connected = True
    peer.settimeout(5)
    yield connection, peer
    connection.stopWriting()  # unregister from the (idle) reactor before the socket closes
    ours.close()
    peer.close()


def _received(peer: socket.socket, size: int, connection: tcp.Connection) -> bytes:
    """Read ``size`` bytes, letting Twisted send what it buffered as the peer drains."""
    chunks: list[bytes] = []
    got = 0
    while got < size:
        connection.doWrite()
        chunk = peer.recv(1 << 20)
        assert chunk, "the connection closed early"
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def test_it_is_installed_where_django_is_set_up() -> None:
    assert tcp.Connection.write is eager_send._write  # by apps.realtime's ready()


def test_a_write_with_nothing_waiting_leaves_at_once(pair) -> None:
    connection, peer = pair
    connection.write(b'{"type":"event","seq":1}')
    peer.setblocking(False)  # already there: no reactor turn sent it
    assert peer.recv(100) == b'{"type":"event","seq":1}'
    assert connection not in reactor.getWriters()  # nothing left for Twisted to send


def test_what_the_kernel_does_not_take_is_sent_later_in_order(pair) -> None:
    connection, peer = pair
    connection.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    big = bytes(range(256)) * 8192  # 2 MiB: more than the socket's buffers hold
    connection.write(big)
    peer.setblocking(False)
    first = peer.recv(1 << 20)  # what the kernel took left at once
    assert 0 < len(first) < len(big)
    peer.setblocking(True)
    assert connection in reactor.getWriters()  # the rest waits for Twisted's doWrite
    connection.write(b"after")  # must not overtake what waits
    assert connection.dataBuffer or connection._tempDataBuffer
    rest = _received(peer, len(big) + 5 - len(first), connection)
    assert first + rest == big + b"after"
    assert connection not in reactor.getWriters()


def test_a_broken_connection_is_closed_by_twisteds_path(pair) -> None:
    connection, peer = pair
    peer.close()
    connection.write(b"x" * 100_000)  # the failed send raises nothing here
    connection.write(b"y")
    assert connection in reactor.getWriters()
    assert connection.doWrite() is main.CONNECTION_LOST  # the reactor then closes it


def test_a_tls_connection_keeps_twisteds_write(pair) -> None:
    connection, _ = pair
    written: list[bytes] = []
    connection.protocol.write = written.append  # what startTLS's TLS layer receives
    connection.TLS = True
    connection.write(b"plaintext")
    assert written == [b"plaintext"]


def test_a_connection_being_closed_buffers_as_twisted_does(pair) -> None:
    connection, _ = pair
    connection.disconnecting = True  # loseConnection: the buffer is flushed, then closed
    connection.write(b"last")
    assert connection._tempDataBuffer == [b"last"]


def test_an_aborted_connection_sends_nothing_more(pair) -> None:
    connection, peer = pair
    connection.abortConnection()  # drops what is written after it (Twisted's promise)
    connection.write(b"after-abort")
    peer.setblocking(False)
    with pytest.raises(BlockingIOError):
        peer.recv(100)  # nothing came (the idle reactor has not closed the socket yet)
    for call in reactor.getDelayedCalls():  # the close abortConnection scheduled
        if call.func == connection.connectionLost:
            call.cancel()


@implementer(IPullProducer)
class _Chunks:
    """A pull producer writing one chunk each time Twisted asks for more."""

    def __init__(self, connection: tcp.Connection, count: int) -> None:
        self.connection, self.left = connection, count

    def resumeProducing(self) -> None:
        if self.left:
            self.left -= 1
            self.connection.write(b"chunk;")

    def stopProducing(self) -> None:
        self.left = 0


def test_a_pull_producer_is_asked_for_more_as_twisted_does(pair) -> None:
    connection, peer = pair
    producer = _Chunks(connection, 20)
    connection.registerProducer(producer, False)  # asks for the first chunk
    assert connection._tempDataBuffer == [b"chunk;"]  # waits for doWrite, which asks again
    assert _received(peer, 20 * 6, connection) == b"chunk;" * 20


def test_a_connection_sending_its_own_way_keeps_twisteds_write(pair) -> None:
    connection, _ = pair

    class Descriptors(tcp.Connection):  # as a UNIX socket's, passing descriptors with bytes
        def writeSomeData(self, data: bytes) -> int:
            return super().writeSomeData(data)

    connection.__class__ = Descriptors
    connection.write(b"x")
    assert connection._tempDataBuffer == [b"x"]
