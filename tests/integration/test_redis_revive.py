"""The test Redis server killed and revived on the same port (the chaos suite's Redis
scenario relies on it): clients holding its URL find it again, empty."""

from __future__ import annotations

import pytest
import redis

from tests.services.redis import RedisServer, ping


def test_a_killed_server_revives_on_its_port_empty() -> None:
    with RedisServer() as server:
        url, port = server.url, server.port
        assert port is not None
        client = redis.Redis.from_url(url, socket_timeout=2)
        client.set("kept", "no")
        server.kill()
        with pytest.raises(ConnectionRefusedError):
            ping(server.host, port)
        with pytest.raises(redis.ConnectionError):
            client.get("kept")
        assert server.revive() > 0
        assert server.url == url
        assert client.get("kept") is None  # the same client reconnects; a crash kept nothing
        client.close()


def test_revive_needs_a_killed_server() -> None:
    with RedisServer() as server, pytest.raises(RuntimeError, match="needs a server stopped"):
        server.revive()
    with pytest.raises(RuntimeError, match="not running"):
        server.kill()
