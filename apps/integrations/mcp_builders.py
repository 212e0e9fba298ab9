"""MCP server rows to engine specs (secrets decrypted here, and only here, for the engine)."""

from __future__ import annotations

import logging
from typing import cast

from apps.accounts.models import Team
from apps.engine.mcp import McpServerSpec
from apps.engine.mcp import McpTransport as EngineTransport
from apps.integrations.crypto import DecryptionError
from apps.integrations.mcp_selectors import team_mcp_servers
from apps.integrations.models import McpServerConfig, McpTransport

__all__ = ["mcp_spec", "mcp_specs"]

logger = logging.getLogger(__name__)


def mcp_spec(server: McpServerConfig) -> McpServerSpec:
    """The engine's spec of ``server``. Raises ValueError for a row the engine cannot use
    (a stored secret map that is not an object, a command or URL missing) and DecryptionError
    for secrets no configured key opens."""
    enabled_tools = (frozenset(server.enabled_tools)
                     if isinstance(server.enabled_tools, list) else None)
    timeouts = {"connect_timeout_s": server.connect_timeout_s,
                "call_timeout_s": server.call_timeout_s}
    if server.transport == McpTransport.STDIO:
        return McpServerSpec(
            name=server.name, transport="stdio", command=server.command,
            args=tuple(server.args or ()), env=server.env_map(), sandbox=server.sandbox,
            network=server.network, read_paths=tuple(server.read_paths or ()),
            enabled_tools=enabled_tools, **timeouts)
    return McpServerSpec(
        name=server.name, transport=cast(EngineTransport, server.transport), url=server.url,
        headers=server.header_map(), enabled_tools=enabled_tools, **timeouts)


def mcp_specs(team: Team, *, problems: list[str] | None = None) -> list[McpServerSpec]:
    """The specs of every MCP server a run of ``team`` connects (its own enabled servers and
    the catalog entries it enabled). A row that cannot become a spec is left out, logged, and
    described in ``problems`` (when given) so the run can show a warning."""
    specs: list[McpServerSpec] = []
    for server in team_mcp_servers(team):
        try:
            specs.append(mcp_spec(server))
        except (ValueError, DecryptionError) as exc:
            logger.error("MCP server %s (#%s) of team %s left out: %s",
                         server.name, server.pk, team.pk, exc)
            if problems is not None:
                problems.append(f"MCP server '{server.name}' is unavailable for this run: its "
                                "stored configuration cannot be used (a site admin must fix "
                                "it).")
    return specs
