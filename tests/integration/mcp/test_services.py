"""The MCP services: who may change what, tenancy, the catalog, write-only headers, SSRF."""

from __future__ import annotations

import pytest

from apps.accounts.models import Team, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.integrations.mcp_builders import mcp_specs
from apps.integrations.mcp_services import (
    HttpServerInput,
    mcp_catalog_disable,
    mcp_catalog_enable,
    mcp_server_create_http,
    mcp_server_delete,
    mcp_server_test,
    mcp_server_update,
)
from apps.integrations.models import McpServerConfig, TeamMcpEnablement
from tests.integration.mcp.conftest import TOKEN, http_server, time_server

pytestmark = pytest.mark.django_db

DOCS = HttpServerInput(name="docs", transport="streamable_http",
                       url="https://mcp.example.com/mcp", headers={"Authorization": TOKEN})


def refused(code: ErrorCode, call, **kwargs) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        call(**kwargs)
    assert caught.value.code is code, caught.value.message
    return caught.value


def test_an_admin_adds_an_http_server_with_its_header_encrypted(acme: Team, dana: User
                                                                 ) -> None:
    server = mcp_server_create_http(team=acme, by=dana, data=DOCS)
    assert (server.team, server.created_by, server.header_map()) == (acme, dana,
                                                                     {"Authorization": TOKEN})
    assert [spec.name for spec in mcp_specs(acme)] == ["docs"]


def test_a_team_admin_cannot_create_a_stdio_server(acme: Team, dana: User) -> None:
    for transport in ("stdio", "STDIO"):
        data = HttpServerInput(name="shell", transport=transport, url="")
        refused(ErrorCode.FORBIDDEN if transport == "stdio" else ErrorCode.INVALID,
                mcp_server_create_http, team=acme, by=dana, data=data)
    assert not McpServerConfig.objects.exists()


def test_a_team_admin_cannot_turn_an_http_server_into_stdio(acme: Team, dana: User) -> None:
    server = mcp_server_create_http(team=acme, by=dana, data=DOCS)
    data = HttpServerInput(name="docs", transport="stdio", url="")
    refused(ErrorCode.FORBIDDEN, mcp_server_update, team=acme, server_id=server.pk, by=dana,
            data=data)
    server.refresh_from_db()
    assert server.transport == "streamable_http"


def test_staff_stdio_servers_of_the_team_are_not_the_admins_to_change(acme: Team, dana: User
                                                                       ) -> None:
    stdio = time_server(acme)
    refused(ErrorCode.FORBIDDEN, mcp_server_update, team=acme, server_id=stdio.pk, by=dana,
            data=DOCS)
    refused(ErrorCode.FORBIDDEN, mcp_server_delete, team=acme, server_id=stdio.pk, by=dana)
    assert McpServerConfig.objects.filter(pk=stdio.pk, command=stdio.command).exists()


def test_members_and_viewers_cannot_manage_servers(acme: Team, bob: User, carol: User) -> None:
    for person in (bob, carol):
        refused(ErrorCode.FORBIDDEN, mcp_server_create_http, team=acme, by=person, data=DOCS)


def test_charlie_can_neither_see_nor_use_acmes_servers(acme: Team, globex: Team, alice: User,
                                                       charlie: User) -> None:
    docs = mcp_server_create_http(team=acme, by=alice, data=DOCS)
    # Through his own team, Acme's server is not there: the same answer as a missing id.
    for call, kwargs in ((mcp_server_update, {"data": DOCS}), (mcp_server_delete, {}),
                         (mcp_server_test, {}), (mcp_catalog_enable, {})):
        for server_id in (docs.pk, 999_999):
            error = refused(ErrorCode.NOT_FOUND, call, team=globex, server_id=server_id,
                            by=charlie, **kwargs)
            assert error.message == "No such MCP server."
    # Through Acme, he is not a member: not_found too.
    refused(ErrorCode.NOT_FOUND, mcp_server_delete, team=acme, server_id=docs.pk, by=charlie)
    refused(ErrorCode.NOT_FOUND, mcp_server_create_http, team=acme, by=charlie, data=DOCS)
    assert mcp_specs(globex) == []
    assert McpServerConfig.objects.filter(pk=docs.pk).exists()


def test_header_values_are_write_only_blank_keeps_and_left_out_removes(acme: Team,
                                                                       alice: User) -> None:
    server = mcp_server_create_http(team=acme, by=alice, data=HttpServerInput(
        name="docs", transport="sse", url="https://mcp.example.com/sse",
        headers={"Authorization": TOKEN, "X-Team": "acme-123456"}))
    mcp_server_update(team=acme, server_id=server.pk, by=alice, data=HttpServerInput(
        name="docs", transport="sse", url="https://mcp.example.com/sse",
        headers={"Authorization": None, "X-New": "fresh-value"}))
    server.refresh_from_db()
    assert server.header_map() == {"Authorization": TOKEN, "X-New": "fresh-value"}
    error = refused(ErrorCode.INVALID, mcp_server_update, team=acme, server_id=server.pk,
                    by=alice, data=HttpServerInput(name="docs", transport="sse",
                                                   url="https://mcp.example.com/sse",
                                                   headers={"X-Unknown": None}))
    assert "X-Unknown needs a value" in error.message


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/mcp", "http://169.254.169.254/mcp",
                                 "http://[::ffff:10.0.0.1]/mcp", "http://user:pw@x.example/"])
def test_private_and_odd_urls_are_refused_by_the_ssrf_guard(acme: Team, alice: User,
                                                            url: str) -> None:
    data = HttpServerInput(name="inside", transport="streamable_http", url=url)
    error = refused(ErrorCode.INVALID, mcp_server_create_http, team=acme, by=alice, data=data)
    assert "refused" in error.message or "URL" in error.message


def test_loopback_is_allowed_when_the_settings_allow_private_networks(
        acme: Team, alice: User, allow_loopback: None) -> None:
    data = HttpServerInput(name="local", transport="streamable_http",
                           url="http://127.0.0.1:8080/mcp")
    assert mcp_server_create_http(team=acme, by=alice, data=data).url.startswith("http://127")


def test_names_are_unique_per_team(acme: Team, alice: User) -> None:
    mcp_server_create_http(team=acme, by=alice, data=DOCS)
    refused(ErrorCode.CONFLICT, mcp_server_create_http, team=acme, by=alice, data=DOCS)


def test_an_owner_enables_and_disables_a_catalog_entry(acme: Team, globex: Team, alice: User
                                                       ) -> None:
    entry = time_server(None, "clock")
    enablement = mcp_catalog_enable(team=acme, server_id=entry.pk, by=alice)
    assert mcp_catalog_enable(team=acme, server_id=entry.pk, by=alice) == enablement
    assert [s.name for s in mcp_specs(acme)] == ["clock"]
    assert mcp_specs(globex) == []  # enabled for Acme only
    mcp_catalog_disable(team=acme, server_id=entry.pk, by=alice)
    mcp_catalog_disable(team=acme, server_id=entry.pk, by=alice)  # idempotent
    assert mcp_specs(acme) == []


def test_only_enabled_catalog_entries_can_be_enabled(acme: Team, alice: User, bob: User
                                                     ) -> None:
    off = time_server(None, "off", enabled=False)
    own = time_server(acme, "own")
    for server_id in (off.pk, own.pk, 999_999):
        refused(ErrorCode.NOT_FOUND, mcp_catalog_enable, team=acme, server_id=server_id,
                by=alice)
    entry = time_server(None, "clock")
    refused(ErrorCode.FORBIDDEN, mcp_catalog_enable, team=acme, server_id=entry.pk, by=bob)
    assert not TeamMcpEnablement.objects.exists()


def test_a_catalog_entry_and_an_own_server_cannot_share_a_name(acme: Team, alice: User) -> None:
    entry = time_server(None, "docs")
    mcp_server_create_http(team=acme, by=alice, data=DOCS)
    refused(ErrorCode.CONFLICT, mcp_catalog_enable, team=acme, server_id=entry.pk, by=alice)
    mcp_server_delete(team=acme, server_id=McpServerConfig.objects.get(team=acme).pk, by=alice)
    mcp_catalog_enable(team=acme, server_id=entry.pk, by=alice)
    refused(ErrorCode.CONFLICT, mcp_server_create_http, team=acme, by=alice, data=DOCS)


def test_deleting_removes_the_server(acme: Team, alice: User) -> None:
    server = http_server(acme)
    mcp_server_delete(team=acme, server_id=server.pk, by=alice)
    assert not McpServerConfig.objects.exists()
