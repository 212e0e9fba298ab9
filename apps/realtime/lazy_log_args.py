"""autobahn's debug log lines build their highlighted arguments only when they are written.

autobahn's WebSocket protocol logs every frame it sends at debug level
(``WebSocketProtocol.sendData``: ``self.log.debug("{func} sent {data_len} bytes for peer
{peer}", func=hltype(self.sendData), peer=hlval(self.peer), data_len=hlval(len(data)))``).
With debug off the call goes to txaio's no-op, but Python evaluates its arguments first:
``hltype`` inspects the method and splits its qualified name, and each of the three asks
``click.style`` for ANSI colours. In issue 20's ``bench_fanout`` (64 conversations x 5
watchers) that was 5 % of Daphne's CPU, about 4 µs of every frame it delivered.

:func:`install` rebinds the two names in ``autobahn.websocket.protocol`` to functions that
return a :class:`LazyText` of the call: the same text, made when the log line is formatted
(``str.format`` calls ``str``), so a debug log that is on reads as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autobahn import util
from autobahn.websocket import protocol

__all__ = ["LazyText", "install"]


class LazyText:
    """``render(*args)`` when turned into text, not before."""

    __slots__ = ("_args", "_render")

    def __init__(self, render: Callable[..., str], *args: Any) -> None:
        self._render = render
        self._args = args

    def __str__(self) -> str:
        return self._render(*self._args)

    __repr__ = __str__  # a ``{value!r}`` field reads the same text

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _hltype(obj: Any) -> LazyText:
    return LazyText(util.hltype, obj)


def _hlval(val: Any, color: str = "white", bold: bool = True) -> LazyText:
    return LazyText(util.hlval, val, color, bold)


def install() -> None:
    """Rebind ``hltype`` and ``hlval`` in ``autobahn.websocket.protocol`` (every process:
    only Daphne's sockets run autobahn). Calling it again changes nothing."""
    protocol.hltype = _hltype  # type: ignore[attr-defined]
    protocol.hlval = _hlval  # type: ignore[attr-defined]
