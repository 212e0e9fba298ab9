"""MCP resources as tools of the run (issue 24), against server-everything: the agent lists a
server's resources and reads one; names are namespaced per server like its tools; an unknown
URI is an error the model reads. mcp-server-time declares the resources capability (the SDK's
default) with none: its listing says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from apps.engine.errors import ToolError
from apps.engine.mcp import McpManager, ToolNamer
from apps.engine.tools.base import Concurrency
from tests.unit.engine.mcp.kit import call, everything_spec, time_spec

LIST = "mcp__everything__list_resources"
READ = "mcp__everything__read_resource"
DOC = "demo://resource/static/document/features.md"

module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def servers() -> AsyncIterator[McpManager]:
    async with McpManager([everything_spec(), time_spec()]) as manager:
        yield manager


@module_loop
async def test_a_server_with_resources_gets_list_and_read_tools_of_its_own(
        servers: McpManager) -> None:
    names = {tool.spec.name for tool in servers.registry}
    assert {LIST, READ, "mcp__time__list_resources", "mcp__time__read_resource"} <= names
    for name in (LIST, READ):
        spec = servers.registry.get(name).spec
        assert spec.concurrency is Concurrency.ALWAYS and not spec.requires_approval


@module_loop
async def test_the_agent_lists_the_resources_and_reads_one(servers: McpManager,
                                                           tmp_path: Path) -> None:
    listing = await call(servers.registry, LIST, tmp_path)
    assert isinstance(listing.content, str)
    assert listing.content.startswith("Resources of the MCP server 'everything':")
    assert f"- {DOC} — features.md (text/markdown)" in listing.content
    read = await call(servers.registry, READ, tmp_path, uri=DOC)
    assert isinstance(read.content, str)
    assert read.content.startswith(f"[resource {DOC} (text/markdown)]\n")
    assert len(read.content.splitlines()) > 3


@module_loop
async def test_a_server_that_lists_no_resources_says_so(servers: McpManager,
                                                        tmp_path: Path) -> None:
    listing = await call(servers.registry, "mcp__time__list_resources", tmp_path)
    assert listing.content == "The MCP server 'time' lists no resources."


@module_loop
async def test_reading_an_unknown_uri_is_an_error_the_model_reads(servers: McpManager,
                                                                  tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="The MCP server 'everything' answered reading "
                                        "demo://nothing/here with an error"):
        await call(servers.registry, READ, tmp_path, uri="demo://nothing/here")


def test_a_server_tool_named_like_a_resource_tool_keeps_a_name_of_its_own() -> None:
    namer = ToolNamer()
    own = namer.name(0, "docs", "list_resources")
    ours = namer.name(0, "docs", "list_resources", kind="resources")
    assert own == "mcp__docs__list_resources"
    assert ours != own and ours.startswith("mcp__docs__list_resources_")
    assert namer.name(0, "docs", "list_resources", kind="resources") == ours  # stable
