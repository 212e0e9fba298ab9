"""MCP over HTTP against a real server built with the MCP SDK, on 127.0.0.1: Streamable HTTP
(2026-07-28) and HTTP+SSE (2025-11-25), each test once per transport unless it says otherwise."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from apps.engine.errors import ToolError
from apps.engine.mcp import McpManager, probe_server
from apps.engine.messages import ImageBlock, TextBlock
from apps.engine.tools.base import Concurrency
from apps.engine.tools.registry import ToolRegistry
from tests.unit.engine.mcp.conftest import HttpServer
from tests.unit.engine.mcp.kit import call, http_spec, serve_http, wait_until
from tests.unit.engine.mcp.py_server import PNG, build_server
from tests.unit.engine.runtime_kit import Echo


def manager(server: HttpServer, **kw: object) -> McpManager:
    spec_kw = {k: kw.pop(k) for k in ("enabled_tools", "call_timeout_s") if k in kw}
    spec = http_spec("py", server.url, server.transport, **spec_kw)
    kw.setdefault("allow_private_network", True)
    return McpManager([spec], **kw)  # type: ignore[arg-type]


async def test_tools_are_listed_into_the_run_registry_and_called(
        http_server: HttpServer, tmp_path: Path) -> None:
    registry = ToolRegistry([Echo()])
    async with manager(http_server, registry=registry) as mcp:
        assert mcp.warnings == []
        assert "Echo" in registry and "mcp__py__echo" in registry
        output = await call(registry, "mcp__py__echo", tmp_path, text="hi")
        assert output.content == "echo: hi" and not output.is_error
        expected = "2026-07-28" if http_server.transport == "streamable_http" else "2025-11-25"
        assert mcp.status()[0].protocol_version == expected
    assert [t.spec.name for t in registry] == ["Echo"]  # the run's MCP tools leave with it


async def test_hints_become_concurrency_and_approval(http_server: HttpServer) -> None:
    async with manager(http_server) as mcp:
        spec = {name: mcp.registry.get(f"mcp__py__{name}").spec  # type: ignore[union-attr]
                for name in ("echo", "append_note", "wipe", "plain")}
    assert spec["echo"].concurrency is Concurrency.ALWAYS and not spec["echo"].requires_approval
    assert spec["append_note"].concurrency is Concurrency.NEVER
    assert not spec["append_note"].requires_approval
    assert spec["wipe"].requires_approval and spec["plain"].requires_approval


async def test_images_structured_content_and_errors_reach_the_result(
        http_server: HttpServer, tmp_path: Path) -> None:
    async with manager(http_server) as mcp:
        picture = await call(mcp.registry, "mcp__py__picture", tmp_path)
        structured = await call(mcp.registry, "mcp__py__structured_only", tmp_path)
        failing = await call(mcp.registry, "mcp__py__failing", tmp_path)
    assert picture.content == [TextBlock(text="a picture:"),
                               ImageBlock(media_type="image/png", data=PNG)]
    assert structured.content == '{"answer": 42}'
    assert failing.is_error and "it broke on purpose" in str(failing.content)


async def test_a_sanitized_name_calls_the_tool_by_its_own_name(
        http_server: HttpServer, tmp_path: Path) -> None:
    async with manager(http_server) as mcp:
        [name] = [t.spec.name for t in mcp.tools() if "weird" in t.spec.name]
        assert name.startswith("mcp__py__weird_name_with_spaces_")
        assert (await call(mcp.registry, name, tmp_path)).content == "weird"


async def test_the_allow_list_limits_the_tools(http_server: HttpServer) -> None:
    async with manager(http_server, enabled_tools={"echo", "hang"}) as mcp:
        assert sorted(t.spec.name for t in mcp.tools()) == ["mcp__py__echo", "mcp__py__hang"]
        infos = {i.name: i.tool_name for i in mcp.status()[0].tools}
        assert infos["echo"] == "mcp__py__echo" and infos["wipe"] is None


async def test_list_changed_updates_the_registry_for_the_next_model_call(
        http_server: HttpServer, tmp_path: Path) -> None:
    async with manager(http_server) as mcp:
        await call(mcp.registry, "mcp__py__add_tool", tmp_path, name="fresh")
        await wait_until(lambda: "mcp__py__fresh" in mcp.registry, what="the new tool")
        assert "mcp__py__fresh" in [d.name for d in mcp.registry.definitions()]
        assert (await call(mcp.registry, "mcp__py__fresh", tmp_path, text="x")).content == \
            "fresh: x"
        await call(mcp.registry, "mcp__py__remove_tool", tmp_path, name="fresh")
        await wait_until(lambda: "mcp__py__fresh" not in mcp.registry, what="the removal")
        assert "mcp__py__echo" in mcp.registry and mcp.warnings == []


async def test_list_changed_sent_before_the_result_is_applied_when_the_call_returns(
        tmp_path: Path) -> None:
    """On 2025-11-25 the notification travels before the result on the same stream, so the
    tool call itself waits for the refresh."""
    async with serve_http(build_server(), "sse") as url, McpManager(
            [http_spec("py", url, "sse")], allow_private_network=True) as mcp:
        await call(mcp.registry, "mcp__py__add_tool", tmp_path, name="now")
        assert "mcp__py__now" in mcp.registry


async def test_cancelling_a_call_cancels_the_request_on_the_server(
        http_server: HttpServer, tmp_path: Path) -> None:
    async with manager(http_server) as mcp:
        task = asyncio.create_task(call(mcp.registry, "mcp__py__hang", tmp_path))
        await asyncio.wait_for(http_server.state.hang_started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(http_server.state.hang_cancelled.wait(), 10)
        assert (await call(mcp.registry, "mcp__py__echo", tmp_path, text="after")).content == \
            "echo: after"


async def test_a_call_past_its_timeout_is_a_tool_error_and_is_cancelled(
        http_server: HttpServer, tmp_path: Path) -> None:
    async with manager(http_server, call_timeout_s=0.3) as mcp:
        with pytest.raises(ToolError, match=r"did not answer within 0\.3 s"):
            await call(mcp.registry, "mcp__py__hang", tmp_path)
        await asyncio.wait_for(http_server.state.hang_cancelled.wait(), 10)


async def test_a_loopback_url_is_refused_unless_private_networks_are_allowed(
        http_server: HttpServer) -> None:
    async with manager(http_server, allow_private_network=False) as mcp:
        assert mcp.tools() == []
        [warning] = mcp.warnings
        assert "'py' is unavailable" in warning.message
        assert "its URL was refused" in warning.message and "loopback" in warning.message
    async with manager(http_server, allow_private_network=False,
                       allowed_networks=["127.0.0.1/32"]) as mcp:
        assert "mcp__py__echo" in mcp.registry


async def test_an_unreachable_server_is_skipped_with_a_warning() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    seen: list[str] = []

    async def sink(event: object) -> None:
        seen.append(event.message)  # type: ignore[attr-defined]

    spec = http_spec("gone", f"http://127.0.0.1:{port}/mcp", "streamable_http")
    async with McpManager([spec], allow_private_network=True, on_warning=sink) as mcp:
        assert mcp.tools() == [] and mcp.status()[0].state == "failed"
    assert len(seen) == 1 and "'gone' is unavailable" in seen[0]


async def test_probe_server_lists_the_tools_for_the_admin(http_server: HttpServer) -> None:
    status = await probe_server(http_spec("py", http_server.url, http_server.transport),
                                allow_private_network=True)
    assert status.state == "connected"
    echo = next(t for t in status.tools if t.name == "echo")
    assert echo.tool_name == "mcp__py__echo" and echo.read_only and not echo.requires_approval
    refused = await probe_server(http_spec("py", http_server.url, http_server.transport))
    assert refused.state == "failed" and "refused" in refused.detail
