"""MCP tool servers for the agent, over the official ``mcp`` SDK (DESIGN 2.7).

:class:`McpServerSpec` describes a server, :class:`McpManager` connects a run's servers and
registers their tools, :class:`McpPool` keeps a worker's servers warm between runs (keyed by
:class:`ServerKey`), :func:`probe_server` is the admin's "test connection".
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
from apps.engine.mcp.pool import McpPool, ServerKey

__all__ = [
    "AcceptDefaults",
    "ElicitationAnswer",
    "ElicitationPort",
    "ElicitationRequest",
    "McpManager",
    "McpPool",
    "McpServerSpec",
    "McpTool",
    "McpToolInfo",
    "McpTransport",
    "ServerKey",
    "ServerStatus",
    "ToolNamer",
    "WarningSink",
    "probe_server",
    "tool_output",
    "tool_spec",
]
