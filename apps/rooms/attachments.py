"""A message's attachments, read when it is sent: MCP resources of the team's servers.

``send.attachments: [{"kind": "mcp_resource", "server", "uri"}]`` (docs/protocol.md). Each is
read once, through the person's own view of the team's MCP servers
(:mod:`apps.rooms.mcp_access`), and stored in the message as content blocks — a text
block headed ``[attached from the MCP server '<server>']`` and ``[resource <uri> (<type>)]``,
or an image — so the history, the model and
the exports all hold what was attached, as it was then. A server of another team, or none of
that name, answers like a missing one.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from apps.accounts.models import Team, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.errors import ToolError
from apps.engine.mcp import McpManager
from apps.engine.mcp.adapter import resource_block
from apps.engine.messages import TextBlock
from apps.realtime.frames import McpResourceAttachment
from apps.rooms.mcp_access import person_servers, require_connected
from apps.rooms.services.limits import grouped, message_max_chars

__all__ = ["read_attachments"]


async def read_attachments(team: Team, user: User, attachments: list[McpResourceAttachment]
                           ) -> list[dict[str, Any]]:
    """The content blocks of ``attachments`` (JSON form), in order. Raises ApplicationError:
    ``not_found`` (no server of that name for this team and person), ``unavailable`` (the
    server did not connect), ``invalid`` (the server refused the read), ``too_large`` (a text
    longer than ``CONFAB_MESSAGE_MAX_CHARS``)."""
    if not attachments:
        return []
    blocks: list[dict[str, Any]] = []
    async with person_servers(team, user, (a.server for a in attachments)) as manager:
        for attachment in attachments:
            require_connected(manager, attachment.server)
            blocks.extend(await _read(manager, attachment))
    return blocks


async def _read(manager: McpManager, attachment: McpResourceAttachment
                ) -> list[dict[str, Any]]:
    try:
        result = await manager.read_resource(attachment.server, attachment.uri)
    except ToolError as exc:
        raise ApplicationError(ErrorCode.INVALID, str(exc)) from exc
    if not result.contents:
        raise ApplicationError(ErrorCode.INVALID, _("The resource %(uri)s is empty.")
                               % {"uri": attachment.uri})
    out = []
    for contents in result.contents:
        block = resource_block(contents)
        if isinstance(block, TextBlock):
            block = TextBlock(text=f"[attached from the MCP server '{attachment.server}']\n"
                                   f"{block.text}")
            _require_fits(attachment, block.text)
        out.append(block.model_dump(mode="json", exclude_none=True))
    return out


def _require_fits(attachment: McpResourceAttachment, text: str) -> None:
    limit = message_max_chars()
    if len(text) > limit:
        raise ApplicationError(ErrorCode.TOO_LARGE, _(
            "The resource %(uri)s is %(length)s characters long; at most %(limit)s fit in one "
            "message.") % {"uri": attachment.uri, "length": grouped(len(text)),
                           "limit": grouped(limit)})
