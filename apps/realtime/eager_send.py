"""Daphne's sockets send a frame when it is written, not at the reactor's next turn.

Twisted's TCP transport never sends in ``write``: it buffers the bytes, registers the socket
for writability (an ``add_writer`` on the asyncio reactor: an ``epoll_ctl`` and a selector key
rebuilt), and sends them when the loop next reports the socket writable, then unregisters it
(``remove_writer``: the same again). A room's broadcast writes one frame to each of its
sockets, so every frame paid for that round trip through the loop and waited for it: in
issue 20's ``bench_fanout`` (64 conversations x 5 watchers, three interleaved pairs of runs)
Daphne spent 91-99 µs of CPU per delivered frame with it and 73-80 without, and the room's
p50 went from 50-53 to 45-47 ms. asyncio's own transports have always sent at once when
nothing is queued (``_SelectorSocketTransport.write``).

:func:`install` makes Twisted's plain TCP connections do the same: when nothing of the
connection is waiting to be sent, ``write`` sends at once, and only what the kernel did not
take is handed to Twisted's buffer, sent as before. So bytes leave in the order they were
written, and a connection whose send failed is closed by Twisted's own path (its ``doWrite``
meets the same error and reports the connection lost) instead of by the writer. Twisted's
``write`` stays in charge where sending at once would change what it promises:

- a ``startTLS`` connection: its bytes go through the TLS layer first (whose ciphertext
  Twisted then buffers); a TLS endpoint's layer sits above the plain connection instead, and
  its ciphertext is sent at once like any bytes;
- a pull producer registered (``streaming=False``): Twisted asks it for more only when its
  buffer empties in ``doWrite``, which a write sent at once never reaches;
- a connection that sends its own way (``writeSomeData`` overridden: a UNIX socket passes
  file descriptors with its bytes);
- a connection being closed or aborted (``abortConnection`` drops what is written after it).
"""

from __future__ import annotations

from typing import Any

from twisted.internet import tcp

__all__ = ["install"]

_ORIGINAL = tcp.Connection.write
_PLAIN_SEND = tcp.Connection.writeSomeData


def install() -> None:
    """Patch ``twisted.internet.tcp.Connection.write`` (every process: only Daphne serves
    over Twisted). Calling it again changes nothing."""
    tcp.Connection.write = _write  # type: ignore[method-assign]


def _write(self: Any, data: bytes) -> None:
    if type(data) is bytes and data and _idle(self):
        try:
            sent = self.socket.send(data)
        except OSError:  # the kernel's buffer is full (Twisted's write waits for room), or
            sent = 0  # the connection broke (Twisted's send meets it and closes the connection)
        if sent == len(data):
            return
        data = data[sent:]
    _ORIGINAL(self, data)


def _idle(connection: Any) -> bool:
    """Whether ``connection`` may send now: open for writing, none of its bytes waiting in
    Twisted's buffers (so none can be overtaken), and none of the cases of the module's
    docstring."""
    return (connection.connected and not connection.disconnecting
            and not connection._writeDisconnected and not connection._aborting
            and not connection.TLS and type(connection).writeSomeData is _PLAIN_SEND
            and (connection.producer is None or connection.streamingProducer)
            and not connection._tempDataBuffer
            and connection.offset == len(connection.dataBuffer))
