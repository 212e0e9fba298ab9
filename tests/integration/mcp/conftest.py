"""Fixtures of the MCP server-side tests: an admin of Acme, signed-in clients, MCP server rows
(a real stdio server: mcp-server-time from the virtualenv), and an SDK-written HTTP server on
127.0.0.1 served from a thread, so synchronous views can probe it.

The personas (alice owner, bob member, carol viewer of Acme; charlie of Globex) come from
``tests/integration/conftest.py``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import Membership, Role, Team, User
from apps.integrations.models import McpServerConfig, McpTransport
from tests.integration.personas import make_user
from tests.services.mcp_servers import time_command
from tests.services.oauth_mcp import AuthServerState, oauth_mcp_server
from tests.unit.engine.mcp.kit import serve_http
from tests.unit.engine.mcp.py_server import build_server

TOKEN = "Bearer s3cr3t-header-value-1234"
ENV_SECRET = "env-secret-value-5678"


@pytest.fixture
def dana(acme: Team) -> User:
    """An admin (not owner) of Acme."""
    user = make_user("dana")
    Membership.objects.create(team=acme, user=user, role=Role.ADMIN)
    return user


@pytest.fixture
def signed_in(db: None) -> Callable[[User], Client]:
    def make(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def allow_loopback(settings: Any) -> None:
    """Let HTTP MCP URLs on 127.0.0.1 through the SSRF guard (as the tests' servers are)."""
    settings.CONFAB = {**settings.CONFAB, "ALLOW_PRIVATE_NETWORK": True}


def time_server(team: Team | None, name: str = "time", **fields: Any) -> McpServerConfig:
    """mcp-server-time over stdio (what site staff would define), for ``team`` or the
    catalog (``team=None``)."""
    command, args, read_paths = time_command()
    server = McpServerConfig(name=name, transport=McpTransport.STDIO, team=team,
                             catalog=team is None, command=command, args=list(args),
                             read_paths=list(read_paths), **fields)
    server.set_secrets(env={"TIME_API_KEY": ENV_SECRET})
    server.full_clean()
    server.save()
    return server


def http_server(team: Team, name: str = "docs", url: str = "https://mcp.example.com/mcp",
                **fields: Any) -> McpServerConfig:
    """A team's HTTP server row, with an Authorization header (nothing listens by default)."""
    server = McpServerConfig(name=name, transport=McpTransport.STREAMABLE_HTTP, team=team,
                             url=url, **fields)
    server.set_secrets(headers={"Authorization": TOKEN})
    server.save()
    return server


@pytest.fixture
def sdk_http_server() -> Iterator[str]:
    """The engine tests' SDK server (``py_server.build_server``) over Streamable HTTP on
    127.0.0.1, in a thread of its own; yields its URL."""
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        async with serve_http(build_server(), "streamable_http") as url:
            box.update(url=url, loop=asyncio.get_running_loop(), stop=asyncio.Event())
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10), "the SDK test server did not start"
    yield box["url"]
    box["loop"].call_soon_threadsafe(box["stop"].set)
    thread.join(15)


@pytest.fixture
def protected() -> Iterator[tuple[str, AuthServerState]]:
    """``(endpoint URL, state)`` of a running OAuth-protected MCP server on 127.0.0.1 (written
    with the SDK's server-side auth: tests/services/oauth_mcp.py), in a thread of its own."""
    with oauth_mcp_server() as served:
        yield served
