"""A server's MCP resources as two tools of the run (issue 24): list them, read one.

Spec: "Resources" (``server/resources``, protocol 2025-11-25): ``resources/list`` is paginated
(``cursor`` / ``nextCursor``), ``resources/read`` answers ``contents``, each text or a base64
blob. A server offers them when it declares the ``resources`` capability.

The tools are named like the server's tools, ``mcp__<server>__list_resources`` and
``mcp__<server>__read_resource`` (:class:`~apps.engine.mcp.adapter.ToolNamer`, which keeps them
apart from a server tool of the same name), so they exist only in runs of the team the server
belongs to. Both are read-only: they run beside other safe calls and need no approval. Each
call asks the server afresh, so a ``notifications/resources/list_changed`` needs no refresh.
"""

from __future__ import annotations

from typing import Protocol

import mcp_types as types

from apps.engine.mcp.adapter import blocks_output, resource_block
from apps.engine.tools.base import (
    BaseTool,
    Concurrency,
    ToolCategory,
    ToolContext,
    ToolOutput,
    ToolSpec,
)

__all__ = ["ListResourcesTool", "ReadResourceTool", "ResourceSource", "listing_text"]

_TIMEOUT_GRACE_S = 5.0


class ResourceSource(Protocol):
    """The side of a server connection the resource tools need; both raise ToolError when
    the request cannot be made or answered."""

    name: str

    async def list_resources(self, cursor: str | None) -> types.ListResourcesResult: ...

    async def read_resource(self, uri: str) -> types.ReadResourceResult: ...


class ListResourcesTool(BaseTool):
    """``mcp__<server>__list_resources`` {cursor?}: one page of the server's resources."""

    def __init__(self, name: str, read_name: str, server: ResourceSource,
                 timeout_s: float) -> None:
        self.spec = ToolSpec(  # type: ignore[misc]  # per instance, like McpTool
            name=name, description=(
                f"List the resources (documents, files, records) the MCP server "
                f"'{server.name}' offers: each one's URI, name, type and description. Read one "
                f"with {read_name}."),
            parameters={"type": "object", "properties": {"cursor": {
                "type": "string", "description": "From the previous page's 'next page' line."}},
                "additionalProperties": False},
            category=ToolCategory.MCP, concurrency=Concurrency.ALWAYS,
            timeout_s=timeout_s + _TIMEOUT_GRACE_S)
        self.server = server
        self.read_name = read_name

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        page = await self.server.list_resources(ctx.arguments.get("cursor"))
        return ToolOutput(content=listing_text(self.server.name, page, self.spec.name))


class ReadResourceTool(BaseTool):
    """``mcp__<server>__read_resource`` {uri}: the resource's contents."""

    def __init__(self, name: str, server: ResourceSource, timeout_s: float) -> None:
        self.spec = ToolSpec(  # type: ignore[misc]
            name=name, description=(
                f"Read a resource of the MCP server '{server.name}' by its URI (as listed)."),
            parameters={"type": "object", "properties": {"uri": {
                "type": "string", "minLength": 1, "description": "The resource's URI."}},
                "required": ["uri"], "additionalProperties": False},
            category=ToolCategory.MCP, concurrency=Concurrency.ALWAYS,
            timeout_s=timeout_s + _TIMEOUT_GRACE_S)
        self.server = server

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        result = await self.server.read_resource(ctx.arguments["uri"])
        blocks = [resource_block(c) for c in result.contents]
        if not blocks:
            return ToolOutput(content=f"The resource {ctx.arguments['uri']} is empty.")
        return blocks_output(blocks)


def listing_text(server: str, page: types.ListResourcesResult, list_name: str) -> str:
    """One page of resources as lines for the model: ``- <uri> — <name> (<mime>): <desc>``,
    then how to ask for the next page, if any."""
    if not page.resources:
        return f"The MCP server '{server}' lists no resources."
    lines = [f"Resources of the MCP server '{server}':"]
    for r in page.resources:
        mime = f" ({r.mime_type})" if r.mime_type else ""
        about = f": {r.description}" if r.description else ""
        lines.append(f"- {r.uri} — {r.title or r.name}{mime}{about}")
    if page.next_cursor:
        lines.append(f"More: call {list_name} with cursor {page.next_cursor!r}.")
    return "\n".join(lines)
