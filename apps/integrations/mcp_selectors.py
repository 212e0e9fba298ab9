"""Reads about a team's MCP servers. Every lookup goes through the team: another team's server
answers exactly like a missing one (None)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from apps.accounts.models import Team
from apps.integrations.models import McpServerConfig, TeamMcpEnablement

__all__ = [
    "CatalogChoice",
    "McpOverview",
    "mcp_catalog_entry",
    "mcp_server_candidates",
    "team_mcp_overview",
    "team_mcp_server",
    "team_mcp_servers",
    "team_mcp_visible_server",
]


def team_mcp_servers(team: Team) -> list[McpServerConfig]:
    """What a run of ``team`` connects: the team's own enabled servers and the enabled catalog
    entries it turned on, by name (a stable order gives stable tool names)."""
    turned_on = TeamMcpEnablement.objects.filter(team=team).values("server_id")
    return list(McpServerConfig.objects.filter(
        Q(team=team) | Q(team__isnull=True, catalog=True, pk__in=turned_on), enabled=True,
    ).order_by("name", "pk"))


def mcp_server_candidates(team: Any) -> QuerySet[McpServerConfig]:
    """The enabled servers that may apply to ``team`` (a Team, its id or an ``OuterRef`` to
    one): its own and every catalog entry, turned on by it or not. A superset of
    :func:`team_mcp_servers` without its subquery: ``Exists`` of it, annotated on a query
    that is made anyway, tells a team without servers from one whose list must be read."""
    return McpServerConfig.objects.filter(Q(team=team) | Q(team__isnull=True, catalog=True),
                                          enabled=True)


def team_mcp_server(team: Team, server_id: int) -> McpServerConfig | None:
    """The team's own server ``server_id`` (not a catalog entry), or None."""
    return McpServerConfig.objects.filter(team=team, pk=server_id).first()


def mcp_catalog_entry(server_id: int) -> McpServerConfig | None:
    """The catalog entry ``server_id`` that site staff keep enabled, or None."""
    return McpServerConfig.objects.filter(pk=server_id, team__isnull=True, catalog=True,
                                          enabled=True).first()


def team_mcp_visible_server(team: Team, server_id: int) -> McpServerConfig | None:
    """A server ``team``'s managers may look at: its own, or an enabled catalog entry."""
    return team_mcp_server(team, server_id) or mcp_catalog_entry(server_id)


@dataclass(frozen=True, slots=True)
class CatalogChoice:
    """A catalog entry as a team sees it: ``enabled`` for this team or not."""

    server: McpServerConfig
    enabled: bool


@dataclass(frozen=True, slots=True)
class McpOverview:
    """The settings page's view: the team's own servers and the catalog."""

    own: list[McpServerConfig]
    catalog: list[CatalogChoice]


def team_mcp_overview(team: Team) -> McpOverview:
    """Every server of ``team`` (enabled or not) and every enabled catalog entry."""
    turned_on = set(TeamMcpEnablement.objects.filter(team=team)
                    .values_list("server_id", flat=True))
    catalog: QuerySet[McpServerConfig] = McpServerConfig.objects.filter(
        team__isnull=True, catalog=True, enabled=True).order_by("name")
    return McpOverview(
        own=list(McpServerConfig.objects.filter(team=team).order_by("name")),
        catalog=[CatalogChoice(entry, entry.pk in turned_on) for entry in catalog],
    )
