"""MCP tool -> engine Tool (DESIGN 2.5, 2.7): names, hints, schemas and results.

- **Names** are ``mcp__<server>__<tool>``, each part reduced to ``[A-Za-z0-9_-]`` (what every
  provider accepts in a function name), at most 64 characters (OpenAI's and Anthropic's limit).
  A name that had to be changed or cut gets ``_<8 hex>`` of a SHA-256 of the exact server and
  tool names, so ``my.server`` and ``my_server`` cannot meet; a name still taken in the run (two
  servers with the same name) gets the hash of the pair and a counter. :class:`ToolNamer` keeps
  each (server, tool) pair's name for the whole run, so a ``tools/list_changed`` never renames a
  tool the model already used.
- **Hints** (MCP ``ToolAnnotations``; spec: "Tool annotations" in the 2025-06-18 tools page):
  ``readOnlyHint`` true -> the call may run beside other concurrency-safe calls; otherwise it runs
  alone. ``destructiveHint`` defaults to true and only means something when ``readOnlyHint`` is
  false, so a tool that is not read-only requires approval unless it says
  ``destructiveHint: false``. Hints come from the server; only site staff and team admins
  configure servers, so the team trusts them as far as it trusts the server.
- **inputSchema** goes to the registry unchanged: each provider adapter converts schemas itself
  (the Gemini one to its subset).
- **Results**: text blocks join into one text; images stay images (the types the providers
  take); an embedded text resource becomes its text under a ``[resource <uri>]`` line; binary
  resources, audio and resource links become a line that says what they were;
  ``structuredContent`` is given as JSON text when the result has no text of its own;
  ``isError`` -> ``is_error``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Protocol

import mcp_types as types

from apps.engine.messages import ImageBlock, TextBlock
from apps.engine.tools.base import (
    BaseTool,
    Concurrency,
    ToolCategory,
    ToolContext,
    ToolOutput,
    ToolSpec,
)

__all__ = [
    "IMAGE_TYPES",
    "MAX_NAME_LENGTH",
    "McpCaller",
    "McpTool",
    "ToolNamer",
    "blocks_output",
    "content_block",
    "resource_block",
    "sanitize",
    "tool_output",
    "tool_spec",
]

MAX_NAME_LENGTH = 64
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image types every provider adapter sends as an image; others are described in text."""

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 8
_CALL_TIMEOUT_GRACE_S = 5.0  # the executor's hard limit lets the MCP timeout (and cancel) go first


def sanitize(part: str) -> str:
    """``part`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _NOT_ALLOWED.sub("_", part) or "_"


class ToolNamer:
    """Gives each (server, tool) pair of one run its unique tool name (see the module doc).

    ``server_key`` tells apart two servers that share a name (their position in the run's list).
    """

    def __init__(self) -> None:
        self._names: dict[tuple[int, str, str], str] = {}
        self._taken: set[str] = set()

    def name(self, server_key: int, server: str, tool: str, kind: str = "tool") -> str:
        """The name of ``tool`` of ``server``: the same on every call for the same pair.
        ``kind`` keeps confab's own tools for a server (``"resources"``: list_resources,
        read_resource) apart from the server's tools of the same name."""
        known = self._names.get((server_key, kind, tool))
        if known is not None:
            return known
        plain = f"mcp__{sanitize(server)}__{sanitize(tool)}"
        exact = plain == f"mcp__{server}__{tool}" and len(plain) <= MAX_NAME_LENGTH
        name = plain if exact else _hashed(plain, server, tool, 0)
        salt = 0
        while name in self._taken:
            salt += 1
            name = _hashed(plain, server, tool, salt)
        self._taken.add(name)
        self._names[(server_key, kind, tool)] = name
        return name


def _hashed(plain: str, server: str, tool: str, salt: int) -> str:
    key = f"{server}\x00{tool}" + (f"\x00{salt}" if salt else "")
    digest = hashlib.sha256(key.encode()).hexdigest()[:_HASH_CHARS]
    return f"{plain[: MAX_NAME_LENGTH - _HASH_CHARS - 1]}_{digest}"


def tool_spec(name: str, server: str, tool: types.Tool, *, call_timeout_s: float) -> ToolSpec:
    """The engine spec of the MCP ``tool`` of ``server``, called ``name`` in the run."""
    hints = tool.annotations or types.ToolAnnotations()
    read_only = hints.read_only_hint is True
    destructive = not read_only and hints.destructive_hint is not False
    description = (tool.description or tool.title or hints.title
                   or f"The {tool.name} tool of the MCP server {server}.")
    return ToolSpec(
        name=name, description=description, parameters=dict(tool.input_schema),
        category=ToolCategory.MCP,
        concurrency=Concurrency.ALWAYS if read_only else Concurrency.NEVER,
        requires_approval=destructive, timeout_s=call_timeout_s + _CALL_TIMEOUT_GRACE_S)


class McpCaller(Protocol):
    """The side of a server connection a tool needs: its ``name`` and ``call_tool``, which
    raises ToolError when the call cannot be made or answered."""

    name: str

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult: ...


class McpTool(BaseTool):
    """One MCP tool of one server, as an engine Tool; ``mcp_name`` is the server's own name."""

    def __init__(self, spec: ToolSpec, server: McpCaller, mcp_name: str) -> None:
        self.spec = spec  # type: ignore[misc]  # per instance, unlike the built-in tools
        self.server = server
        self.mcp_name = mcp_name

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        """Call the tool on its server; a failed call raises ToolError (see the manager)."""
        result = await self.server.call_tool(self.mcp_name, ctx.arguments)
        return tool_output(result)

    def __repr__(self) -> str:
        return f"McpTool({self.spec.name!r} -> {self.server.name}/{self.mcp_name})"


def tool_output(result: types.CallToolResult) -> ToolOutput:
    """``result`` as a ToolOutput: one text when every part is text, else text and images."""
    blocks = [_block(item) for item in result.content]
    if result.structured_content is not None and not any(
            isinstance(b, TextBlock) for b in blocks):
        blocks.append(TextBlock(text=json.dumps(result.structured_content, ensure_ascii=False)))
    return blocks_output(blocks or [TextBlock(text="(the tool returned no content)")],
                         is_error=result.is_error)


def blocks_output(blocks: list[TextBlock | ImageBlock], *, is_error: bool = False
                  ) -> ToolOutput:
    """``blocks`` as a ToolOutput: one text when every block is text, else the blocks."""
    if all(isinstance(b, TextBlock) for b in blocks):
        return ToolOutput(content="\n".join(b.text for b in blocks),  # type: ignore[union-attr]
                          is_error=is_error)
    return ToolOutput(content=blocks, is_error=is_error)


def content_block(item: types.ContentBlock) -> TextBlock | ImageBlock:
    """One MCP content block (of a tool result or a prompt message) as the model gets it."""
    return _block(item)


def resource_block(contents: types.TextResourceContents | types.BlobResourceContents
                   ) -> TextBlock | ImageBlock:
    """One read resource's contents as the model gets them (see the module doc)."""
    return _resource(contents)


def _block(item: types.ContentBlock) -> TextBlock | ImageBlock:
    if isinstance(item, types.TextContent):
        return TextBlock(text=item.text)
    if isinstance(item, types.ImageContent):
        return _image(item.mime_type, item.data, "image")
    if isinstance(item, types.AudioContent):
        return TextBlock(text=f"[audio ({item.mime_type}, {_size(item.data)}) not shown]")
    if isinstance(item, types.EmbeddedResource):
        return _resource(item.resource)
    if isinstance(item, types.ResourceLink):
        return TextBlock(text=_link(item))
    return TextBlock(text=f"[{getattr(item, 'type', 'unknown')} content not shown]")


def _image(mime_type: str, data: str, what: str) -> TextBlock | ImageBlock:
    media_type = mime_type.split(";", 1)[0].strip().lower()
    if media_type in IMAGE_TYPES:
        return ImageBlock(media_type=media_type, data=data)
    return TextBlock(text=f"[{what} ({mime_type}, {_size(data)}) not shown]")


def _resource(contents: types.TextResourceContents | types.BlobResourceContents
              ) -> TextBlock | ImageBlock:
    mime = f" ({contents.mime_type})" if contents.mime_type else ""
    if isinstance(contents, types.TextResourceContents):
        return TextBlock(text=f"[resource {contents.uri}{mime}]\n{contents.text}")
    if contents.mime_type and contents.mime_type.startswith("image/"):
        return _image(contents.mime_type, contents.blob, f"resource {contents.uri}")
    return TextBlock(text=f"[resource {contents.uri}{mime}: {_size(contents.blob)} of binary "
                          "data, not shown]")


def _link(link: types.ResourceLink) -> str:
    parts = [f"[resource link: {link.name} <{link.uri}>"]
    if link.mime_type:
        parts.append(f" ({link.mime_type})")
    if link.description:
        parts.append(f": {link.description}")
    return "".join(parts) + "]"


def _size(data: str) -> str:
    """The decoded size of base64 ``data``, without decoding it."""
    return f"{len(data.rstrip('=')) * 3 // 4} bytes"
