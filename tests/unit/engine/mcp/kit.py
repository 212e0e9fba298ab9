"""Helpers for the MCP tests: serving the SDK test server over HTTP on 127.0.0.1, specs of the
real servers, calling a registered tool the way the executor does, and process bookkeeping."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import serve_loop
from mcp.server.sse import SseServerTransport
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from apps.engine.mcp import McpServerSpec
from apps.engine.tools.base import Tool, ToolContext, ToolOutput
from apps.engine.tools.registry import ToolRegistry
from tests.services.mcp_servers import everything_command, python_read_paths, time_command

PY_SERVER = Path(__file__).resolve().with_name("py_server.py")


@asynccontextmanager
async def serve_http(server: MCPServer, transport: str) -> AsyncIterator[str]:
    """Serve ``server`` on 127.0.0.1 and yield its endpoint URL: "streamable_http" with the
    SDK's app (it speaks 2026-07-28 to our client), "sse" with :func:`legacy_sse_app` (2025-11-25).
    The socket listens before the server starts, so clients may connect at once."""
    if transport == "streamable_http":
        app, path = server.streamable_http_app(), "/mcp"
    else:
        app, path = legacy_sse_app(server), "/sse"
    async with serve_app(app) as origin:
        yield f"{origin}{path}"


@asynccontextmanager
async def serve_app(app: Any) -> AsyncIterator[str]:
    """Serve the ASGI ``app`` on 127.0.0.1 and yield its origin (``http://127.0.0.1:<port>``);
    the socket listens before the server starts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    http = uvicorn.Server(config)
    task = asyncio.create_task(http.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        http.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


def legacy_sse_app(server: MCPServer) -> Starlette:
    """HTTP+SSE serving the handshake era only (the SDK's ``serve_loop``), the way servers built
    before 2026-07-28 do, so the tests cover list changes sent unasked."""
    lowlevel = server._lowlevel_server
    sse = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as streams, \
                lowlevel.lifespan(lowlevel) as state:
            await serve_loop(lowlevel, streams[0], streams[1], lifespan_state=state,
                             init_options=lowlevel.create_initialization_options())
        return Response()

    return Starlette(routes=[Route("/sse", endpoint=handle_sse, methods=["GET"]),
                             Mount("/messages/", app=sse.handle_post_message)])


def http_spec(name: str, url: str, transport: str, **kw: Any) -> McpServerSpec:
    return McpServerSpec(name=name, transport=transport, url=url, **kw)  # type: ignore[arg-type]


def everything_spec(name: str = "everything", **kw: Any) -> McpServerSpec:
    command, args, paths = everything_command()
    return McpServerSpec(name=name, transport="stdio", command=command, args=args,
                         read_paths=paths, **kw)


def time_spec(name: str = "time", **kw: Any) -> McpServerSpec:
    command, args, paths = time_command()
    return McpServerSpec(name=name, transport="stdio", command=command, args=args,
                         read_paths=paths, **kw)


def py_stdio_spec(name: str = "py", *, read_paths: tuple[str, ...] = (),
                  args: tuple[str, ...] = (), **kw: Any) -> McpServerSpec:
    """The SDK test server over stdio, run by this interpreter from its file with ``args``."""
    paths = (*python_read_paths(), str(PY_SERVER.parent), *read_paths)
    return McpServerSpec(name=name, transport="stdio", command=sys.executable,
                         args=(str(PY_SERVER), *args), read_paths=paths, **kw)


async def call(registry: ToolRegistry, name: str, tmp_path: Path, /, **arguments: Any
               ) -> ToolOutput:
    """Call the registered tool ``name`` as the executor would (validated arguments)."""
    tool: Tool | None = registry.get(name)
    assert tool is not None, f"{name} not in {[t.spec.name for t in registry]}"
    problem = registry.validate(name, arguments)
    assert problem is None, problem

    async def emit(event: Any) -> None:
        pass

    ctx = ToolContext(call_id="call_1", arguments=arguments, workspace=tmp_path, emit=emit)
    return await tool.invoke(ctx)


def descendants() -> set[int]:
    """Pids of every live descendant of this process (zombies included: a zombie is a child
    nobody reaped)."""
    return {p.pid for p in psutil.Process().children(recursive=True)}


def open_fds() -> int:
    return psutil.Process().num_fds()


async def wait_until(condition: Callable[[], bool], *, timeout_s: float = 10.0,
                     what: str = "the condition") -> None:
    """Wait for something another process or task makes true (a file, a registry entry)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def processes_running(pattern: str) -> list[psutil.Process]:
    """Descendants whose command line contains ``pattern``."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            if pattern in " ".join(process.cmdline()):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found
