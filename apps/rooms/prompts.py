"""MCP prompts for the composer: ``/server:prompt`` slash commands (docs/protocol.md).

The ``prompts`` frame lists the prompts of the person's team servers
(:mod:`apps.rooms.mcp_access`); ``send.prompt`` names one with its arguments, and the message
stored is the typed text followed by the prompt as the server expands it (``prompts/get``), so
the history, the model and the exports hold what was sent.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.utils.translation import gettext as _

from apps.accounts.models import Team, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.errors import ToolError
from apps.engine.mcp.prompts import missing_arguments, prompt_blocks
from apps.realtime.frames import PromptRef
from apps.rooms.mcp_access import person_servers, require_connected

__all__ = ["expand_prompt", "team_prompts"]


async def team_prompts(team: Team, user: User) -> list[dict[str, Any]]:
    """``[{"server", "name", "title", "description", "arguments": [{"name", "description",
    "required"}]}]``: every prompt of the person's servers (a server that does not connect or
    list is left out)."""
    async with person_servers(team, user) as manager:
        return [asdict(p) for p in await manager.prompts()]


async def expand_prompt(team: Team, user: User, prompt: PromptRef) -> list[dict[str, Any]]:
    """The blocks (JSON form) of ``prompt`` expanded by its server. Raises ApplicationError:
    ``not_found`` (no such server for this person, or no such prompt on it),
    ``unavailable`` (the server did not connect), ``invalid`` (a required argument is
    missing, or the server refused)."""
    async with person_servers(team, user, [prompt.server]) as manager:
        require_connected(manager, prompt.server)
        known = {p.name: p for p in await manager.prompts() if p.server == prompt.server}
        info = known.get(prompt.name)
        if info is None:
            raise ApplicationError(ErrorCode.NOT_FOUND, _(
                "The MCP server '%(server)s' has no prompt named '%(name)s'.")
                % {"server": prompt.server, "name": prompt.name})
        missing = missing_arguments(info, prompt.arguments)
        if missing:
            raise ApplicationError(ErrorCode.INVALID, _(
                "/%(server)s:%(name)s needs %(missing)s.")
                % {"server": prompt.server, "name": prompt.name, "missing": ", ".join(missing)})
        try:
            result = await manager.get_prompt(prompt.server, prompt.name, prompt.arguments)
        except ToolError as exc:
            raise ApplicationError(ErrorCode.INVALID, str(exc)) from exc
    return [block.model_dump(mode="json", exclude_none=True) for block in prompt_blocks(result)]
