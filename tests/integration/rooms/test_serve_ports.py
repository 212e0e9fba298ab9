"""``manage.py serve``'s free-port probe on real sockets: a port whose last connections are in
TIME_WAIT (what a crashed ``make demo`` leaves) is free; one with a listener is taken."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from django.core.management.base import CommandError

from apps.rooms.management.commands.serve import _require_free

HOST = "127.0.0.1"


def _listener() -> socket.socket:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((HOST, 0))
    server.listen()
    return server


@pytest.fixture
def port_in_time_wait() -> Iterator[int]:
    """A port nothing listens on whose served connection was closed by the server side first,
    so it sits in TIME_WAIT (as after a server is stopped mid-connection)."""
    server = _listener()
    port = server.getsockname()[1]
    with socket.create_connection((HOST, port)) as client:
        served, _ = server.accept()
        served.close()  # the side that closes first keeps TIME_WAIT
        client.recv(1)  # the server's FIN has arrived
    server.close()
    yield port


def test_a_port_with_only_time_wait_connections_is_free(port_in_time_wait: int) -> None:
    with socket.socket() as plain, pytest.raises(OSError):  # the state a naive probe trips on
        plain.bind((HOST, port_in_time_wait))
    _require_free(HOST, port_in_time_wait)


def test_a_port_someone_listens_on_is_taken() -> None:
    with _listener() as server:
        port = server.getsockname()[1]
        with pytest.raises(CommandError, match=f"port {port} on {HOST} is taken"):
            _require_free(HOST, port)
