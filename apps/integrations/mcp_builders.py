"""MCP server rows to engine specs (secrets decrypted here, and only here, for the engine).

A server that needs a sign-in gets the run's access token as its ``Authorization`` header
(:func:`apps.integrations.mcp_oauth.run_access_token`: the team's, or the run starter's own);
without one it is left out of the run with a notice that links the sign-in page. Each spec
has its key in the worker's MCP pool (:func:`mcp_pool_servers`): a person-scoped server's
connection is the person's own, so another member's run never reuses it."""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import cast

import httpx2
from django.utils.translation import gettext

from apps.accounts.models import Team, User
from apps.engine.events import WarningEvent
from apps.engine.mcp import McpServerSpec, ServerKey
from apps.engine.mcp import McpTransport as EngineTransport
from apps.integrations.crypto import DecryptionError
from apps.integrations.mcp_oauth import NotSignedIn, run_access_token, sign_in_path
from apps.integrations.mcp_selectors import team_mcp_servers
from apps.integrations.models import McpServerConfig, McpSignIn, McpTransport

__all__ = ["mcp_pool_servers", "mcp_principal", "mcp_spec", "mcp_specs"]

logger = logging.getLogger(__name__)


def mcp_spec(server: McpServerConfig, *, access_token: str | None = None) -> McpServerSpec:
    """The engine's spec of ``server`` (with ``access_token`` as its bearer token, for a
    server that needs a sign-in). Raises ValueError for a row the engine cannot use
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
    headers = server.header_map()
    if access_token is not None:  # RFC 6750 2.1; the MCP authorization spec: header only
        headers["Authorization"] = f"Bearer {access_token}"
    return McpServerSpec(
        name=server.name, transport=cast(EngineTransport, server.transport), url=server.url,
        headers=headers, enabled_tools=enabled_tools, **timeouts)


def mcp_specs(team: Team, *, user: User | None = None,
              problems: list[WarningEvent] | None = None) -> list[McpServerSpec]:
    """The specs of every MCP server a run of ``team`` started by ``user`` connects (its own
    enabled servers and the catalog entries it enabled). A row that cannot become a spec, or a
    server nobody signed in to for this run, is left out and described in ``problems`` (when
    given) so the run can show a warning."""
    return [spec for _, spec in _usable(team, user, problems)]


def mcp_principal(server: McpServerConfig, user: User | None) -> Hashable | None:
    """Whose sign-in a connection to ``server`` carries for a run started by ``user``: that
    person's for a person-scoped server (each person gets connections of their own in the
    pool), None for the rest (one connection per team)."""
    return user.pk if server.sign_in == McpSignIn.PERSON and user is not None else None


def mcp_pool_servers(team: Team, user: User | None = None, *,
                     problems: list[WarningEvent] | None = None
                     ) -> list[tuple[ServerKey, McpServerSpec]]:
    """:func:`mcp_specs` with each server's pool key: (team, row, :func:`mcp_principal`)."""
    return [(ServerKey(team=team.pk, server=server.pk, principal=mcp_principal(server, user)),
             spec) for server, spec in _usable(team, user, problems)]


def _usable(team: Team, user: User | None, problems: list[WarningEvent] | None
            ) -> list[tuple[McpServerConfig, McpServerSpec]]:
    specs: list[tuple[McpServerConfig, McpServerSpec]] = []
    for server in team_mcp_servers(team):
        try:
            token = run_access_token(server, team, user) if server.needs_sign_in else None
            specs.append((server, mcp_spec(server, access_token=token)))
        except NotSignedIn as missing:
            if problems is not None:
                problems.append(_sign_in_notice(team, missing))
        except httpx2.HTTPError as exc:
            logger.warning("MCP server %s (#%s): the sign-in could not be refreshed: %s",
                           server.name, server.pk, type(exc).__name__)
            if problems is not None:
                problems.append(WarningEvent(message=gettext(
                    "MCP server '%(name)s' is unavailable for this run: its sign-in could not "
                    "be refreshed (the server did not answer).") % {"name": server.name}))
        except (ValueError, DecryptionError) as exc:
            logger.error("MCP server %s (#%s) of team %s left out: %s",
                         server.name, server.pk, team.pk, exc)
            if problems is not None:
                problems.append(WarningEvent(message=gettext(
                    "MCP server '%(name)s' is unavailable for this run: its stored "
                    "configuration cannot be used (a site admin must fix it).")
                    % {"name": server.name}))
    return specs


def _sign_in_notice(team: Team, missing: NotSignedIn) -> WarningEvent:
    name = missing.server.name
    skipped = (gettext("MCP server '%(name)s' is skipped: nobody has signed in to it for the "
                       "team (an owner or admin signs in).") if missing.for_team else
               gettext("MCP server '%(name)s' is skipped: the person who started this run has "
                       "not signed in to it."))
    return WarningEvent(message=skipped % {"name": name},
                        link=sign_in_path(team, missing.server), link_text=gettext("Sign in"))
