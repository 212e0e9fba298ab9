"""McpServerConfig: the rules of a valid row, secrets encrypted at rest, the specs a run gets."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from apps.accounts.models import Team
from apps.engine.events import WarningEvent
from apps.integrations.mcp_builders import mcp_specs
from apps.integrations.mcp_selectors import mcp_server_candidates, team_mcp_servers
from apps.integrations.models import McpServerConfig, McpTransport, TeamMcpEnablement
from tests.integration.mcp.conftest import ENV_SECRET, TOKEN, http_server, time_server

pytestmark = pytest.mark.django_db


def problems(**fields) -> dict[str, list[str]]:
    server = McpServerConfig(**fields)
    with pytest.raises(ValidationError) as caught:
        server.full_clean()
    return caught.value.message_dict


def column(server: McpServerConfig, name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {name} FROM integrations_mcpserverconfig WHERE id = %s",
                       [server.pk])
        return cursor.fetchone()[0]


def test_a_stdio_server_needs_a_command(acme: Team) -> None:
    assert "command" in problems(name="tools", transport="stdio", team=acme)


def test_an_http_server_needs_an_http_url_and_no_command(acme: Team) -> None:
    assert "url" in problems(name="docs", transport="streamable_http", team=acme)
    assert "url" in problems(name="docs", transport="sse", team=acme, url="ftp://x.example")
    assert "command" in problems(name="docs", transport="sse", team=acme,
                                 url="https://x.example/sse", command="/bin/sh")


def test_the_name_is_a_tool_prefix(acme: Team) -> None:
    assert "name" in problems(name="my server", transport="sse", team=acme,
                              url="https://x.example/sse")
    assert "name" in problems(name="x" * 33, transport="sse", team=acme,
                              url="https://x.example/sse")


def test_a_catalog_entry_has_no_team_and_a_team_server_is_no_catalog_entry(acme: Team) -> None:
    assert "catalog" in problems(name="t", transport="stdio", command="x", team=acme,
                                 catalog=True)
    assert "team" in problems(name="t", transport="stdio", command="x")
    with pytest.raises(IntegrityError), transaction.atomic():  # the database says so too
        McpServerConfig.objects.create(name="t", transport="stdio", command="x")


def test_lists_timeouts_and_secret_names_are_checked(acme: Team) -> None:
    base = {"name": "t", "transport": "stdio", "command": "x", "team": acme}
    assert "args" in problems(**base, args="--flag")
    assert "enabled_tools" in problems(**base, enabled_tools=["ok", 3])
    assert "read_paths" in problems(**base, read_paths=["relative/path"])
    assert "connect_timeout_s" in problems(**base, connect_timeout_s=0)
    assert "call_timeout_s" in problems(**base, call_timeout_s=10_000)
    assert "env" in problems(**base, env='{"NOT A NAME": "v"}')
    assert "headers" in problems(name="t", transport="sse", team=acme,
                                 url="https://x.example/sse", headers='{"bad header": "v"}')


def test_names_are_unique_per_team_and_in_the_catalog(acme: Team, globex: Team) -> None:
    http_server(acme, "docs")
    http_server(globex, "docs")  # another team may use the same name
    with pytest.raises(IntegrityError), transaction.atomic():
        http_server(acme, "docs")
    time_server(None, "clock")
    with pytest.raises(ValidationError, match="catalog already has"):
        time_server(None, "clock")  # full_clean checks it (the admin's form does)
    with pytest.raises(IntegrityError), transaction.atomic():
        McpServerConfig.objects.create(name="clock", transport="stdio", command="x",
                                       catalog=True)


def test_env_and_headers_are_ciphertext_in_the_database(acme: Team) -> None:
    stdio = time_server(acme)
    http = http_server(acme)
    for server, name, secret in ((stdio, "env", ENV_SECRET), (http, "headers", TOKEN)):
        raw = column(server, name)
        assert secret not in raw and raw.startswith("gAAAAA")  # a Fernet token
    again = McpServerConfig.objects.get(pk=stdio.pk)
    assert again.env_map() == {"TIME_API_KEY": ENV_SECRET} and again.env_names == ["TIME_API_KEY"]
    assert McpServerConfig.objects.get(pk=http.pk).header_map() == {"Authorization": TOKEN}


def test_mcp_specs_are_the_teams_enabled_servers_and_enabled_catalog_entries(
        acme: Team, globex: Team) -> None:
    time_server(acme, "clock")
    http_server(acme, "off", enabled=False)
    http_server(globex, "globex-only")
    catalog = time_server(None, "shared")
    time_server(None, "not-chosen")
    TeamMcpEnablement.objects.create(team=acme, server=catalog)
    specs = {spec.name: spec for spec in mcp_specs(acme)}
    assert list(specs) == ["clock", "shared"]
    assert specs["clock"].env == {"TIME_API_KEY": ENV_SECRET}  # decrypted for the engine
    assert specs["clock"].read_paths and specs["clock"].sandbox
    assert [spec.name for spec in mcp_specs(globex)] == ["globex-only"]
    assert mcp_specs(globex)[0].headers == {"Authorization": TOKEN}
    catalog.enabled = False  # staff switched the entry off: no team runs it
    catalog.save()
    assert [spec.name for spec in mcp_specs(acme)] == ["clock"]


def test_candidates_hold_every_server_a_team_runs_and_tell_a_team_without_any(
        acme: Team, globex: Team) -> None:
    """``mcp_server_candidates``: what a run's setup tests with ``Exists`` before reading the
    team's list: never without a server the list has, and empty for a team with none."""
    time_server(acme, "clock")
    http_server(acme, "off", enabled=False)
    catalog = time_server(None, "shared")
    TeamMcpEnablement.objects.create(team=acme, server=catalog)
    candidates = {t: set(mcp_server_candidates(t).values_list("name", flat=True))
                  for t in (acme, globex)}
    assert candidates == {acme: {"clock", "shared"}, globex: {"shared"}}  # globex's: unused
    for team in (acme, globex):
        assert {s.name for s in team_mcp_servers(team)} <= candidates[team]
    catalog.enabled = False
    catalog.save()
    assert not mcp_server_candidates(globex.pk).exists()  # its runs skip reading the list


def test_a_row_the_engine_cannot_use_is_left_out_with_a_problem(acme: Team) -> None:
    McpServerConfig.objects.create(name="broken", transport=McpTransport.STDIO, team=acme,
                                   command="x", env='["not", "an", "object"]')
    http_server(acme, "docs")
    found: list[WarningEvent] = []
    assert [spec.name for spec in mcp_specs(acme, problems=found)] == ["docs"]
    assert len(found) == 1 and "'broken' is unavailable" in found[0].message
