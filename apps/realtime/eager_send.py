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
meets the same error and reports the connection lost) instead of by the writer. A TLS
connection (``startTLS``) keeps Twisted's ``write``: its bytes go through the TLS layer first.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import tcp

__all__ = ["install"]

_ORIGINAL = tcp.Connection.write


def install() -> None:
    """Patch ``twisted.internet.tcp.Connection.write`` (every process: only Daphne serves
    over Twisted). Calling it again changes nothing."""
    tcp.Connection.write = _write  # type: ignore[method-assign]


def _write(self: Any, data: bytes) -> None:
    if type(data) is bytes and data and _idle(self):
        try:
            sent = self.socket.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0  # the kernel's buffer is full: Twisted's waits for it
        except OSError:
            sent = 0  # the connection broke: Twisted's send meets it and closes it
        if sent == len(data):
            return
        data = data[sent:]
    _ORIGINAL(self, data)


def _idle(connection: Any) -> bool:
    """Whether ``connection`` may send now: open for writing, no TLS layer, and none of its
    bytes waiting in Twisted's buffers (so none can be overtaken)."""
    return (connection.connected and not connection.disconnecting
            and not connection._writeDisconnected and not connection.TLS
            and not connection._tempDataBuffer
            and connection.offset == len(connection.dataBuffer))
