"""The MCP part of the team settings page and the admin: who sees and changes what, secrets
never rendered back, "test connection" against real servers."""

from __future__ import annotations

import json
import sys

import pytest
from cryptography.fernet import Fernet
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Team, User
from apps.integrations.models import UNREADABLE_SECRETS, McpServerConfig, TeamMcpEnablement
from tests.integration.mcp.conftest import ENV_SECRET, TOKEN, http_server, time_server
from tests.integration.web.html import assert_no_inline_code, without_csrf

pytestmark = pytest.mark.django_db

SECRETS = (TOKEN, TOKEN.removeprefix("Bearer "), ENV_SECRET)
UNREADABLE = str(UNREADABLE_SECRETS).replace("'", "&#x27;")  # as a page escapes it


def seal_with_a_lost_key(server: McpServerConfig, column: str) -> None:
    """``column`` of ``server`` as a token no configured key opens (past the field)."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {McpServerConfig._meta.db_table} SET {column} = %s "
                       "WHERE id = %s", [Fernet(Fernet.generate_key()).encrypt(b"{}").decode(),
                                         server.pk])


def settings_url(team: Team) -> str:
    return reverse("integrations:team_settings", args=[team.pk])


def url(name: str, team: Team, server_id: int | None = None) -> str:
    return reverse(f"integrations:{name}",
                   args=[team.pk] if server_id is None else [team.pk, server_id])


def assert_no_secret(content: bytes) -> None:
    text = content.decode()
    for secret in SECRETS:
        assert secret not in text


def add_data(**changes: str) -> dict[str, str]:
    return {"name": "docs", "transport": "streamable_http", "url": "https://mcp.example.com/mcp",
            "headers": f"Authorization: {TOKEN}", "enabled": "on", "enabled_tools": "",
            "connect_timeout_s": "15", "call_timeout_s": "120", **changes}


# -- the page ----------------------------------------------------------------------------------
def test_the_page_lists_servers_and_catalog_with_names_of_secrets_only(
        signed_in, acme: Team, alice: User) -> None:
    http_server(acme, "docs")
    time_server(acme, "clock", description="The time, from staff.")
    time_server(None, "shared", description="A vetted clock.")
    page = signed_in(alice).get(settings_url(acme))
    assert page.status_code == 200
    text = page.content.decode()
    for shown in ("docs", "https://mcp.example.com/mcp", "Authorization", "clock",
                  "Set up by site staff", "shared", "A vetted clock.", "Enable for Acme"):
        assert shown in text
    assert_no_secret(page.content)
    assert_no_inline_code(page)


def test_an_owner_adds_an_http_server_from_the_page(signed_in, acme: Team, alice: User) -> None:
    response = signed_in(alice).post(url("mcp_server_add", acme), add_data(), follow=True)
    assert b"The MCP server docs is added." in response.content
    server = McpServerConfig.objects.get(team=acme)
    assert server.header_map() == {"Authorization": TOKEN} and server.created_by == alice
    assert_no_secret(response.content)


def test_a_team_admin_cannot_create_a_stdio_server_from_the_page(
        signed_in, acme: Team, dana: User) -> None:
    response = signed_in(dana).post(url("mcp_server_add", acme), add_data(
        transport="stdio", command="/bin/sh", args='["-c", "id"]', url=""))
    assert response.status_code == 200
    assert b"Select a valid choice" in response.content
    assert not McpServerConfig.objects.exists()
    assert_no_secret(response.content)  # the typed header value is not echoed back


def test_a_refused_url_is_shown_on_the_form(signed_in, acme: Team, alice: User) -> None:
    response = signed_in(alice).post(url("mcp_server_add", acme),
                                     add_data(url="http://127.0.0.1:9/mcp"))
    assert response.status_code == 200 and b"The URL is refused" in response.content
    assert not McpServerConfig.objects.exists()


def test_the_edit_page_keeps_a_blank_header_and_never_shows_it(signed_in, acme: Team,
                                                               alice: User) -> None:
    server = http_server(acme)
    client = signed_in(alice)
    page = client.get(url("mcp_server_edit", acme, server.pk))
    assert b"Authorization:" in page.content
    assert_no_secret(page.content)
    response = client.post(url("mcp_server_edit", acme, server.pk),
                           add_data(headers="Authorization:\nX-Extra: another-secret-99",
                                    url="https://mcp2.example.com/mcp"))
    assert response.status_code == 302
    server.refresh_from_db()
    assert server.url == "https://mcp2.example.com/mcp"
    assert server.header_map() == {"Authorization": TOKEN, "X-Extra": "another-secret-99"}
    bad = client.post(url("mcp_server_edit", acme, server.pk),
                      add_data(name="not valid!", headers="X-Extra: typed-secret-42"))
    assert bad.status_code == 200 and b"typed-secret-42" not in bad.content


def test_headers_no_key_opens_are_said_so_and_entered_again(signed_in, acme: Team,
                                                           alice: User) -> None:
    """A CONFAB_FERNET_KEYS key removed before ``rotate_secrets``: the page and the edit page
    still open, say so, and a save stores the headers given."""
    server = http_server(acme)
    seal_with_a_lost_key(server, "headers")
    client = signed_in(alice)
    for page in (client.get(settings_url(acme)),
                 client.get(url("mcp_server_edit", acme, server.pk))):
        assert page.status_code == 200
        assert UNREADABLE in page.content.decode()
    response = client.post(url("mcp_server_edit", acme, server.pk),
                           add_data(headers="Authorization: Bearer fresh-secret-77"))
    assert response.status_code == 302
    server = McpServerConfig.objects.get(pk=server.pk)
    assert server.header_map() == {"Authorization": "Bearer fresh-secret-77"}
    assert UNREADABLE not in client.get(settings_url(acme)).content.decode()


def test_a_client_secret_no_key_opens_is_forgotten_when_the_server_is_saved(
        signed_in, acme: Team, alice: User) -> None:
    server = http_server(acme, sign_in="team", oauth_client_id="cid",
                         oauth_client_secret="client-secret-1")
    for column in ("headers", "oauth_client_secret"):
        seal_with_a_lost_key(server, column)
    client = signed_in(alice)
    page = client.get(url("mcp_server_edit", acme, server.pk))
    assert page.status_code == 200 and UNREADABLE in page.content.decode()
    response = client.post(url("mcp_server_edit", acme, server.pk), add_data(
        headers="X-Key: fresh", sign_in="team", oauth_client_id="cid", oauth_client_secret=""))
    assert response.status_code == 302
    server = McpServerConfig.objects.get(pk=server.pk)
    assert (server.header_map(), server.oauth_client_secret) == ({"X-Key": "fresh"}, "")


def test_staff_stdio_servers_have_no_edit_page_for_the_team(signed_in, acme: Team,
                                                            alice: User) -> None:
    stdio = time_server(acme)
    client = signed_in(alice)
    assert client.get(url("mcp_server_edit", acme, stdio.pk)).status_code == 403
    assert client.post(url("mcp_server_delete", acme, stdio.pk)).status_code == 403
    assert McpServerConfig.objects.filter(pk=stdio.pk).exists()


def test_an_owner_enables_and_disables_a_catalog_entry_from_the_page(
        signed_in, acme: Team, alice: User) -> None:
    entry = time_server(None, "shared")
    client = signed_in(alice)
    client.post(url("mcp_catalog_enable", acme, entry.pk))
    assert TeamMcpEnablement.objects.filter(team=acme, server=entry).exists()
    page = client.get(settings_url(acme))
    assert b"Disable for Acme" in page.content
    client.post(url("mcp_catalog_disable", acme, entry.pk))
    assert not TeamMcpEnablement.objects.exists()


@pytest.mark.parametrize("name", ["mcp_server_edit", "mcp_server_delete", "mcp_server_test",
                                  "mcp_catalog_enable", "mcp_catalog_disable"])
def test_charlie_gets_404_for_acmes_servers_exactly_like_missing_ones(
        signed_in, acme: Team, globex: Team, charlie: User, name: str) -> None:
    docs = http_server(acme)
    entry = time_server(None, "shared")
    target = entry.pk if name.startswith("mcp_catalog") else docs.pk
    client = signed_in(charlie)
    method = client.get if name == "mcp_server_edit" else client.post
    through_acme = method(url(name, acme, target))
    through_globex = method(url(name, globex, docs.pk))
    missing = method(url(name, globex, 999_999))
    assert through_acme.status_code == through_globex.status_code == missing.status_code == 404
    assert without_csrf(through_globex.content) == without_csrf(missing.content)
    assert signed_in(charlie).get(settings_url(acme)).status_code == 404
    assert McpServerConfig.objects.filter(pk=docs.pk).exists()
    assert not TeamMcpEnablement.objects.exists()


def test_charlies_own_page_shows_nothing_of_acme(signed_in, acme: Team, globex: Team,
                                                 charlie: User) -> None:
    http_server(acme, "acme-docs")
    time_server(acme, "acme-clock")
    page = signed_in(charlie).get(settings_url(globex))
    assert b"acme-docs" not in page.content and b"acme-clock" not in page.content


def test_a_member_cannot_manage_servers(signed_in, acme: Team, bob: User) -> None:
    client = signed_in(bob)
    assert client.post(url("mcp_server_add", acme), add_data()).status_code == 403
    assert not McpServerConfig.objects.exists()


# -- test connection against real servers -------------------------------------------------------
def test_test_connection_lists_the_tools_of_a_stdio_server(signed_in, acme: Team,
                                                           alice: User) -> None:
    server = time_server(acme)
    page = signed_in(alice).post(url("mcp_server_test", acme, server.pk))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Test connection of time:" in text and "connected (MCP" in text
    assert "get_current_time" in text and "mcp__time__get_current_time" in text
    assert "convert_time" in text
    assert_no_secret(page.content)


def test_test_connection_of_an_http_server_sends_the_header_and_never_shows_it(
        signed_in, acme: Team, alice: User, allow_loopback: None, sdk_http_server: str) -> None:
    server = http_server(acme, "py", url=sdk_http_server, enabled_tools=["echo"])
    page = signed_in(alice).post(url("mcp_server_test", acme, server.pk))
    text = page.content.decode()
    assert "connected (MCP" in text and "mcp__py__echo" in text
    assert "not allowed" in text  # the allow-list leaves the other tools out
    assert_no_secret(page.content)


def test_test_connection_says_why_a_server_fails(signed_in, acme: Team, alice: User) -> None:
    broken = McpServerConfig.objects.create(
        name="broken", transport="stdio", team=acme, command=sys.executable,
        args=["-c", "import sys; sys.exit(3)"], connect_timeout_s=5)
    refused = http_server(acme, "inside", url="http://127.0.0.1:9/mcp")  # stored directly
    client = signed_in(alice)
    text = client.post(url("mcp_server_test", acme, broken.pk)).content.decode()
    assert "Test connection of broken:</strong> failed:" in text
    text = client.post(url("mcp_server_test", acme, refused.pk)).content.decode()
    assert "failed:" in text and "loopback" in text
    assert_no_secret(text.encode())


# -- the admin (site staff) ----------------------------------------------------------------------
def test_staff_define_a_stdio_catalog_entry_in_the_admin_with_write_only_env(
        admin_client: Client) -> None:
    add = reverse("admin:integrations_mcpserverconfig_add")
    data = {"name": "clock", "transport": "stdio", "team": "", "catalog": "on",
            "description": "", "enabled": "on", "command": sys.executable,
            "args": '["-m", "mcp_server_time"]', "env_secrets": f"TZ_KEY={ENV_SECRET}",
            "read_paths": f'["{sys.prefix}"]', "sandbox": "on", "network": "on", "url": "",
            "header_secrets": "", "enabled_tools": "", "connect_timeout_s": "15",
            "call_timeout_s": "120"}
    assert admin_client.post(add, data).status_code == 302
    server = McpServerConfig.objects.get(name="clock")
    assert server.catalog and server.env_map() == {"TZ_KEY": ENV_SECRET}
    assert server.enabled_tools is None
    change = reverse("admin:integrations_mcpserverconfig_change", args=[server.pk])
    page = admin_client.get(change)
    assert b"TZ_KEY=" in page.content
    assert_no_secret(page.content)
    listing = admin_client.get(reverse("admin:integrations_mcpserverconfig_changelist"))
    assert b"TZ_KEY" in listing.content
    assert_no_secret(listing.content)
    assert admin_client.post(change, {**data, "env_secrets": "TZ_KEY="}).status_code == 302
    server.refresh_from_db()
    assert server.env_map() == {"TZ_KEY": ENV_SECRET}  # blank kept the value


def admin_form(server: McpServerConfig, env_secrets: str) -> dict[str, object]:
    """The admin's change form of the team's stdio ``server`` as stored, with ``env_secrets``."""
    return {"name": server.name, "transport": "stdio", "team": server.team_id,
            "description": "", "enabled": "on", "command": server.command,
            "args": json.dumps(server.args), "read_paths": json.dumps(server.read_paths),
            "sandbox": "on", "network": "on", "url": "", "env_secrets": env_secrets,
            "header_secrets": "", "enabled_tools": "", "connect_timeout_s": "15",
            "call_timeout_s": "120"}


def test_an_environment_no_key_opens_is_said_so_and_entered_again_in_the_admin(
        admin_client: Client, acme: Team) -> None:
    server = time_server(acme)
    seal_with_a_lost_key(server, "env")
    listing = admin_client.get(reverse("admin:integrations_mcpserverconfig_changelist"))
    assert b"cannot be decrypted: enter them again" in listing.content
    change = reverse("admin:integrations_mcpserverconfig_change", args=[server.pk])
    page = admin_client.get(change)
    assert page.status_code == 200 and UNREADABLE in page.content.decode()
    assert admin_client.post(change, admin_form(server, "TIME_API_KEY=fresh-42")
                             ).status_code == 302
    assert McpServerConfig.objects.get(pk=server.pk).env_map() == {"TIME_API_KEY": "fresh-42"}


def test_a_blank_value_for_an_environment_no_key_opens_is_a_form_error(
        admin_client: Client, acme: Team) -> None:
    """Blank keeps a stored value: there is none to keep."""
    server = time_server(acme)
    seal_with_a_lost_key(server, "env")
    change = reverse("admin:integrations_mcpserverconfig_change", args=[server.pk])
    response = admin_client.post(change, admin_form(server, "TIME_API_KEY="))
    assert response.status_code == 200 and b"TIME_API_KEY" in response.content
    assert b"errornote" in response.content  # refused, with the reason on the form


def test_the_admin_refuses_an_invalid_server(admin_client: Client, acme: Team) -> None:
    add = reverse("admin:integrations_mcpserverconfig_add")
    response = admin_client.post(add, {
        "name": "x", "transport": "stdio", "team": acme.pk, "command": "", "args": "[]",
        "read_paths": "[]", "enabled_tools": "", "connect_timeout_s": "15",
        "call_timeout_s": "120", "env_secrets": "", "header_secrets": ""})
    assert response.status_code == 200 and b"A stdio server needs a command." in response.content
    assert not McpServerConfig.objects.exists()


def test_the_admin_test_connection_action_lists_the_tools(admin_client: Client, acme: Team
                                                          ) -> None:
    good = time_server(acme)
    bad = McpServerConfig.objects.create(name="gone", transport="stdio", team=acme,
                                         command="/nonexistent/mcp-server")
    response = admin_client.post(reverse("admin:integrations_mcpserverconfig_changelist"), {
        "action": "test_connection", "_selected_action": [good.pk, bad.pk]}, follow=True)
    notes = {m.message.split(":", 1)[0]: (m.level_tag, m.message)
             for m in get_messages(response.wsgi_request)}
    assert notes["time"][0] == "success" and "get_current_time" in notes["time"][1]
    assert notes["gone"][0] == "error" and "failed" in notes["gone"][1]
    assert_no_secret(response.content)
