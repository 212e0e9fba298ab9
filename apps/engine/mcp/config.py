"""What the host tells the engine about one MCP server (DESIGN 2.7).

The Django side builds one :class:`McpServerSpec` per enabled ``McpServerConfig`` row of a team
(secrets already decrypted); the engine never reads the database. A spec is validated when it is
made: a stdio spec without a command or an HTTP spec without a URL is a programming error, found
before any run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

import httpx2

__all__ = ["McpServerSpec", "McpTransport"]

McpTransport = Literal["stdio", "streamable_http", "sse"]
"""The three transports of the MCP SDK: a local process over stdin/stdout, Streamable HTTP, and the
older HTTP+SSE (an event stream for answers, POSTs for requests)."""


@dataclass(frozen=True, slots=True, repr=False)
class McpServerSpec:
    """One MCP server of a team.

    ``name``: the server's name in the team (it becomes part of each tool's name,
    ``mcp__<name>__<tool>``); ``transport``;

    stdio: ``command`` and ``args`` start the server; ``env`` is its whole configured environment
    (the process gets a cleared environment plus these); ``sandbox``: run it inside bubblewrap
    where the host has a working one (filesystem confined, see ``transport.py``); ``network``:
    whether the sandboxed server keeps the host's network (most useful servers call an API);
    ``read_paths``: host directories the sandboxed server may read (its installation: a
    virtualenv, a ``node_modules``), everything else but the system directories is hidden;

    HTTP (``streamable_http``, ``sse``): ``url`` (checked by the SSRF guard) and ``headers`` sent
    with every request (e.g. ``Authorization``); ``auth``: an httpx auth flow for every request
    instead (e.g. :class:`~apps.engine.mcp.bearer.BearerAuth`, which renews a refused token;
    not part of the spec's equality);

    ``enabled_tools``: the MCP tool names the agent may use (None: every tool the server lists);
    ``connect_timeout_s``: seconds to start and initialize, and to list tools;
    ``call_timeout_s``: seconds one tool call may take before it is cancelled.

    ``repr`` names the keys of ``env`` and ``headers`` but never their values (secrets).
    """

    name: str
    transport: McpTransport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: httpx2.Auth | None = field(default=None, compare=False)
    enabled_tools: frozenset[str] | None = None
    connect_timeout_s: float = 15.0
    call_timeout_s: float = 120.0
    sandbox: bool = True
    network: bool = True
    read_paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("an MCP server needs a name")
        if self.transport not in get_args(McpTransport):
            raise ValueError(f"unknown MCP transport {self.transport!r}")
        if self.transport == "stdio":
            if not self.command or self.url:
                raise ValueError(f"stdio MCP server {self.name!r} needs a command and no URL")
        elif not self.url or self.command:
            raise ValueError(f"HTTP MCP server {self.name!r} needs a URL and no command")
        if self.connect_timeout_s <= 0 or self.call_timeout_s <= 0:
            raise ValueError(f"MCP server {self.name!r}: timeouts must be positive")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "read_paths", tuple(self.read_paths))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "headers", dict(self.headers))
        if self.enabled_tools is not None:
            object.__setattr__(self, "enabled_tools", frozenset(_names(self.enabled_tools)))

    def allows(self, tool_name: str) -> bool:
        """Whether the allow-list lets the agent use the server's tool ``tool_name``."""
        return self.enabled_tools is None or tool_name in self.enabled_tools

    def __repr__(self) -> str:
        where = f"command={self.command!r}" if self.transport == "stdio" else f"url={self.url!r}"
        secrets = f"env={sorted(self.env)}, headers={sorted(self.headers)}"
        return f"McpServerSpec({self.name!r}, {self.transport!r}, {where}, {secrets})"


def _names(names: Iterable[str]) -> Iterable[str]:
    if isinstance(names, str):  # a lone string would become a set of letters
        raise TypeError("enabled_tools takes a collection of tool names, not one string")
    return names
