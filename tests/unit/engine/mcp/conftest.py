"""Fixtures of the MCP tests: the SDK test server over HTTP on 127.0.0.1, per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.unit.engine.mcp.kit import serve_http
from tests.unit.engine.mcp.py_server import ServerState, build_server


@dataclass
class HttpServer:
    url: str
    transport: str
    state: ServerState


@pytest.fixture(params=["streamable_http", "sse"])
async def http_server(request: pytest.FixtureRequest) -> AsyncIterator[HttpServer]:
    """The test server over Streamable HTTP speaking 2026-07-28, and over HTTP+SSE speaking
    2025-11-25 (the two protocol eras: list changes on a listen stream, or unasked)."""
    state = ServerState()
    async with serve_http(build_server(state), request.param) as url:
        yield HttpServer(url, request.param, state)
