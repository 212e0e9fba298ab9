"""autobahn's per-frame debug line builds its highlighted arguments only when it is written
(:mod:`apps.realtime.lazy_log_args`): a real autobahn server protocol on Twisted's string
transport sends frames with debug off and with debug on and an observer reading the lines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import txaio
from autobahn import util
from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from autobahn.websocket import protocol
from twisted.internet.testing import StringTransport
from twisted.logger import formatEvent, globalLogPublisher

from apps.realtime import lazy_log_args


@pytest.fixture
def rendered(monkeypatch) -> list[Any]:
    """What autobahn's ``hl`` was asked to highlight (``hltype`` and ``hlval`` call it)."""
    calls: list[Any] = []
    original = util.hl

    def counting(text: Any, *args: Any, **kwargs: Any) -> str:
        calls.append(text)
        return original(text, *args, **kwargs)

    monkeypatch.setattr(util, "hl", counting)
    return calls


@pytest.fixture
def server() -> tuple[WebSocketServerProtocol, StringTransport]:
    sent = StringTransport()
    ws = WebSocketServerProtocol()
    ws.factory = WebSocketServerFactory()
    ws.makeConnection(sent)
    return ws, sent


@pytest.fixture
def debug_lines() -> Iterator[list[str]]:
    """autobahn's debug log on, its lines as an observer formats them."""
    lines: list[str] = []

    def observe(event: dict[str, Any]) -> None:
        lines.append(formatEvent(event))

    level = txaio.get_global_log_level()
    txaio.set_global_log_level("debug")
    globalLogPublisher.addObserver(observe)
    yield lines
    globalLogPublisher.removeObserver(observe)
    txaio.set_global_log_level(level)


def test_it_is_installed_where_django_is_set_up() -> None:
    assert protocol.hltype is lazy_log_args._hltype  # by apps.realtime's ready()
    assert protocol.hlval is lazy_log_args._hlval


def test_frames_sent_with_debug_off_render_nothing(server, rendered) -> None:
    ws, sent = server
    for _ in range(3):
        ws.sendData(b"frame")
    assert sent.value() == b"frame" * 3
    assert rendered == []


def test_a_debug_line_reads_as_autobahn_writes_it(server, rendered, debug_lines) -> None:
    ws, _ = server
    ws.sendData(b"frame")
    line = next(line for line in debug_lines if "sent" in line)
    assert rendered  # written: the arguments were highlighted
    assert line == (f"{util.hltype(ws.sendData)} sent {util.hlval(5)} bytes for peer "
                    f"{util.hlval(ws.peer)}")


def test_a_lazy_value_formats_like_its_text() -> None:
    value = lazy_log_args._hlval(42, color="green", bold=False)
    assert str(value) == util.hlval(42, color="green", bold=False)
    assert f"[{value:>20}]" == f"[{util.hlval(42, color='green', bold=False):>20}]"


def test_a_lazy_value_reads_the_same_in_repr() -> None:
    assert repr(lazy_log_args._hltype(WebSocketServerProtocol.sendData)) == util.hltype(
        WebSocketServerProtocol.sendData)
