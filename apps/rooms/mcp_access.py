"""One person's short-lived view of their team's MCP servers, outside a run: to read a
resource they attach or list and expand the prompts of the composer.

The servers are the ones a run this person started would connect (the team's own and the
catalog entries it turned on, with the person's sign-in where a server needs one:
:func:`apps.integrations.mcp_builders.mcp_pool_servers`), taken from this process's warm pool
(:mod:`apps.integrations.mcp_pool`) under the same keys, so a server started for one request
serves the next ones. A name that is not among them — another team's server, or none —
answers ``not_found``, the same words either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from channels.db import database_sync_to_async
from django.utils.translation import gettext

from apps.accounts.models import Team, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.mcp import McpManager
from apps.integrations.mcp_builders import mcp_pool_servers
from apps.integrations.mcp_pool import mcp_pools

__all__ = ["person_servers", "require_connected"]


@asynccontextmanager
async def person_servers(team: Team, user: User, names: Iterable[str] | None = None
                         ) -> AsyncIterator[McpManager]:
    """A manager connected to ``names`` of the person's servers (None: all of them), the
    connections given back to the pool on leaving. ApplicationError ``not_found`` for a name
    that is not one of them."""
    servers = {spec.name: (key, spec) for key, spec in
               await database_sync_to_async(mcp_pool_servers)(team, user)}
    wanted = list(dict.fromkeys(names)) if names is not None else list(servers)
    for name in wanted:
        if name not in servers:
            raise ApplicationError(ErrorCode.NOT_FOUND, gettext("No MCP server named '%(name)s'.")
                                   % {"name": name})
    chosen = [servers[n] for n in wanted]
    async with McpManager([spec for _, spec in chosen], keys=[key for key, _ in chosen],
                          pool=mcp_pools.get(), whole_team=names is None) as manager:
        yield manager


def require_connected(manager: McpManager, server: str) -> None:
    """``unavailable`` when ``server`` did not connect (with why)."""
    for status in manager.status():
        if status.name == server and status.state != "connected":
            raise ApplicationError(ErrorCode.UNAVAILABLE,
                                   gettext(
                "The MCP server '%(server)s' is unavailable: %(detail)s.")
                % {"server": server, "detail": status.detail})
