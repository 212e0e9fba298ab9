"""One person's short-lived view of their team's MCP servers, outside a run: to read a
resource they attach or list and expand the prompts of the composer.

The servers are the ones a run this person started would connect (the team's own and the
catalog entries it turned on, with the person's sign-in where a server needs one:
:func:`apps.integrations.mcp_builders.mcp_specs`). A name that is not among them — another
team's server, or none — answers ``not_found``, the same words either way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from channels.db import database_sync_to_async
from django.conf import settings

from apps.accounts.models import Team, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.mcp import McpManager
from apps.integrations.mcp_builders import mcp_specs

__all__ = ["person_servers", "require_connected"]


@asynccontextmanager
async def person_servers(team: Team, user: User, names: Iterable[str] | None = None
                         ) -> AsyncIterator[McpManager]:
    """A manager connected to ``names`` of the person's servers (None: all of them), closed
    on leaving. ApplicationError ``not_found`` for a name that is not one of them."""
    specs = {s.name: s for s in await database_sync_to_async(mcp_specs)(team, user=user)}
    wanted = list(dict.fromkeys(names)) if names is not None else list(specs)
    for name in wanted:
        if name not in specs:
            raise ApplicationError(ErrorCode.NOT_FOUND, f"No MCP server named '{name}'.")
    conf = settings.CONFAB
    async with McpManager([specs[n] for n in wanted],
                          allow_private_network=conf["ALLOW_PRIVATE_NETWORK"],
                          sandbox=conf["SANDBOX"]) as manager:
        yield manager


def require_connected(manager: McpManager, server: str) -> None:
    """``unavailable`` when ``server`` did not connect (with why)."""
    for status in manager.status():
        if status.name == server and status.state != "connected":
            raise ApplicationError(ErrorCode.UNAVAILABLE,
                                   f"The MCP server '{server}' is unavailable: {status.detail}.")
