"""A real MCP server written with the MCP SDK's own server API (``MCPServer``), for the tests.

In the test process it is served over Streamable HTTP or HTTP+SSE on 127.0.0.1
(:func:`tests.unit.engine.mcp.kit.serve_http`); run as a script (``python py_server.py``) it
serves stdio. The file imports nothing of the project, so a sandboxed Python can run it with only
this directory and the virtualenv in sight.

Tools: ``echo`` (read-only), ``append_note`` (writes, not destructive), ``wipe`` (destructive),
``plain`` (no hints), ``add_tool`` / ``remove_tool`` (change the tool list and say so:
``notifications/tools/list_changed``, on a ``subscriptions/listen`` stream for 2026-07-28
clients), ``hang`` (waits until cancelled; ``marker`` names a file it creates once running, and
``<marker>.cancelled`` once cancelled),
``picture`` (text and a PNG), ``structured_only`` (structured content and no text), ``failing``
(an ``isError`` result), ``read_file`` (for the sandbox tests) and ``weird.name/with spaces``.
Prompts: ``总结`` (a CJK name, argument ``主题``); the tool ``add_prompt`` adds one and says so
(``notifications/prompts/list_changed``).
``python py_server.py --helpers SECONDS`` first starts two ``sleep SECONDS`` helper processes
(:func:`start_helpers`).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

# A 1x1 transparent PNG.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAA"
       "SUVORK5CYII=")


@dataclass
class ServerState:
    """What the in-process server lets a test observe."""

    hang_started: anyio.Event = field(default_factory=anyio.Event)
    hang_cancelled: anyio.Event = field(default_factory=anyio.Event)
    notes: list[str] = field(default_factory=list)


def build_server(state: ServerState | None = None) -> MCPServer:
    """A fresh server with the tools of the module doc."""
    state = state or ServerState()
    server = MCPServer("confab-test-server", version="1.0", log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Return the text."""
        return f"echo: {text}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def append_note(text: str) -> str:
        """Append a note."""
        state.notes.append(text)
        return f"{len(state.notes)} notes"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def wipe() -> str:
        """Delete every note."""
        state.notes.clear()
        return "wiped"

    @server.tool()
    def plain() -> str:
        """A tool without hints."""
        return "plain"

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Add a tool called `name` and tell the client."""
        def added(text: str) -> str:
            return f"{name}: {text}"
        server.add_tool(added, name=name, description=f"The added tool {name}.",
                        annotations=ToolAnnotations(read_only_hint=True))
        await _tools_changed(ctx)
        return f"added {name}"

    @server.tool()
    async def remove_tool(name: str, ctx: Context) -> str:
        """Remove the tool `name` and tell the client."""
        server.remove_tool(name)
        await _tools_changed(ctx)
        return f"removed {name}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def hang(marker: str = "") -> str:
        """Wait until cancelled."""
        state.hang_started.set()
        if marker:
            Path(marker).write_text("running")
        try:
            await anyio.sleep_forever()
        finally:
            state.hang_cancelled.set()
            if marker:
                Path(marker + ".cancelled").write_text("cancelled")
        return "never"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def picture() -> CallToolResult:
        """A text and a picture."""
        return CallToolResult(content=[TextContent(text="a picture:"),
                                       ImageContent(data=PNG, mime_type="image/png")])

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def structured_only() -> CallToolResult:
        """Structured content without text."""
        return CallToolResult(content=[], structured_content={"answer": 42})

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def failing() -> str:
        """Always fails."""
        raise ToolError("it broke on purpose")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def read_file(path: str) -> str:
        """Read a file."""
        try:
            return Path(path).read_text()
        except OSError as exc:
            raise ToolError(f"cannot read {path}: {exc.strerror}") from exc

    @server.tool(name="weird.name/with spaces", annotations=ToolAnnotations(read_only_hint=True))
    def weird() -> str:
        """A tool whose name needs sanitizing."""
        return "weird"

    @server.tool()
    async def add_prompt(name: str, ctx: Context) -> str:
        """Add a prompt called `name` and tell the client."""
        server.add_prompt(Prompt.from_function(lambda: f"the {name} prompt", name=name))
        if ctx.request_context.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_prompts_changed()
        else:
            await ctx.request_context.session.send_prompt_list_changed()
        return f"added {name}"

    @server.prompt(name="总结", description="总结一个主题")
    def summarise(主题: str) -> str:
        return f"请用三句话总结：{主题}"

    return server


async def _tools_changed(ctx: Context) -> None:
    """list_changed the way each protocol era receives it."""
    if ctx.request_context.protocol_version in MODERN_PROTOCOL_VERSIONS:
        await ctx.notify_tools_changed()
    else:
        await ctx.request_context.session.send_tool_list_changed()


def start_helpers(seconds: str) -> None:
    """Start two ``sleep <seconds>`` helpers, as servers start language servers or browsers:
    one in our process group, one in a session of its own. Neither is waited for: the server
    exits cleanly when its stdin closes and leaves them to whoever cleans up."""
    subprocess.Popen(["sleep", seconds])
    subprocess.Popen(["sleep", seconds], start_new_session=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--helpers"]:
        start_helpers(sys.argv[2])
    build_server().run("stdio")
    sys.exit(0)
