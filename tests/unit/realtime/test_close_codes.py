"""The sockets' close codes are ones Daphne can send: its autobahn sends 1000 or a code of
3000-4999 and raises for any other (1011 raised instead of closing the socket; found by a
tester's check). RFC 6455 7.4.2 gives 4000-4999 to applications."""

from __future__ import annotations

import pytest
from autobahn.twisted.websocket import WebSocketServerProtocol

from apps.realtime import sockets


class _Recorded(WebSocketServerProtocol):
    """autobahn's protocol, its close frame recorded instead of written to a transport."""

    sent: int | None = None

    def sendCloseFrame(self, code: int | None = None, reasonUtf8: bytes | None = None,
                       isReply: bool = False) -> None:
        self.sent = code


@pytest.mark.parametrize("name", [n for n in sockets.__all__ if n.startswith("CLOSE_")])
def test_autobahn_sends_each_close_code(name: str) -> None:
    code = getattr(sockets, name)
    protocol = _Recorded()
    protocol.sendClose(code=code)  # raises for a code outside its ranges
    assert protocol.sent == code and 4000 <= code <= 4999


def test_autobahn_refuses_the_internal_error_code() -> None:  # why CLOSE_SERVER_ERROR is 4011
    with pytest.raises(Exception, match="invalid close code 1011"):
        _Recorded().sendClose(code=1011)
