"""MCP tool servers for the agent, over the official ``mcp`` SDK (DESIGN 2.7).

:class:`McpServerSpec` describes a server, :class:`McpManager` connects a run's servers and
registers their tools, :func:`probe_server` is the admin's "test connection".
"""

from apps.engine.mcp.adapter import McpTool, ToolNamer, tool_output, tool_spec
from apps.engine.mcp.config import McpServerSpec, McpTransport
from apps.engine.mcp.elicitation import (
    AcceptDefaults,
    ElicitationAnswer,
    ElicitationPort,
    ElicitationRequest,
)
from apps.engine.mcp.manager import (
    McpManager,
    McpToolInfo,
    ServerStatus,
    WarningSink,
    probe_server,
)

__all__ = [
    "AcceptDefaults",
    "ElicitationAnswer",
    "ElicitationPort",
    "ElicitationRequest",
    "McpManager",
    "McpServerSpec",
    "McpTool",
    "McpToolInfo",
    "McpTransport",
    "ServerStatus",
    "ToolNamer",
    "WarningSink",
    "probe_server",
    "tool_output",
    "tool_spec",
]
