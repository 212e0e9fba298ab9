"""Every page × {anonymous, charlie (other team), carol (viewer), bob (member), alice (owner)}
(DESIGN 4: isolation tests as a matrix).

``test_every_page_has_a_row`` fails when a URL pattern of the account, team, settings or wiki
pages has no row here (the wiki's socket has its own rows in
``tests/integration/wiki/test_wiki_socket.py``). Another team's object answers exactly like a
missing one: for charlie, every 404 is compared with the answer for ids that do not exist.
Every HTML answer is checked for the CSP header and for inline code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from apps.accounts import urls as account_urls
from apps.accounts.services import api_token_create, invitation_create
from apps.integrations import urls as integration_urls
from apps.integrations.forms import builtin_tools
from apps.integrations.models import McpServerConfig
from apps.wiki import urls as wiki_urls
from apps.wiki.services import page_save
from tests.integration.web.html import assert_no_inline_code, without_csrf

PERSONAS = ("anonymous", "charlie", "carol", "bob", "alice")
MISSING = {"team_id": 999_999, "user_id": 999_999, "invitation_id": 999_999,
           "token_id": 999_999, "token": "no-such-invitation", "mcp_server_id": 999_999,
           "catalog_id": 999_999, "oauth_server_id": 999_999, "path": "No such page.md"}
MCP_FORM = {"name": "docs", "transport": "streamable_http", "url": "https://mcp.example.com/mcp",
            "headers": "Authorization: Bearer x-123456", "enabled": "on",
            "connect_timeout_s": "15", "call_timeout_s": "120"}

OPEN = (200, 200, 200, 200, 200)
MOVED = (302, 302, 302, 302, 302)
SIGNED_IN = (302, 200, 200, 200, 200)  # anonymous: to the login page
MEMBERS = (302, 404, 200, 200, 200)
MANAGE = (302, 404, 403, 403, 200)
MANAGE_WRITE = (302, 404, 403, 403, 302)
WRITERS = (302, 404, 403, 200, 200)  # members who may start runs: a person's own sign-in
WIKI_WRITE_PAGE = (302, 404, 403, 200, 200)  # the editor, rename: viewers read only
WIKI_WRITE = (302, 404, 403, 302, 302)
WIKI_UPLOAD = (302, 404, 403, 400, 400)  # a form post without the file: refused as such


@dataclass(frozen=True)
class Row:
    """One URL name and method; ``kwargs`` name entries of the ``ids`` fixture; ``statuses``
    in the order of :data:`PERSONAS`."""

    name: str
    method: str
    statuses: tuple[int, int, int, int, int]
    kwargs: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)


MATRIX = [
    Row("home", "GET", MOVED),
    Row("accounts:signup", "GET", (200, 302, 302, 302, 302)),
    Row("accounts:signup", "POST", MOVED, data={
        "username": "newcomer", "display_name": "New", "email": "new@example.com",
        "password1": "a-long-passphrase-9", "password2": "a-long-passphrase-9"}),
    Row("accounts:login", "GET", OPEN),
    Row("accounts:login", "POST", OPEN, data={"username": "alice", "password": "wrong"}),
    Row("accounts:logout", "POST", MOVED),
    Row("accounts:password_reset", "GET", OPEN),
    Row("accounts:password_reset", "POST", MOVED, data={"email": "alice@example.com"}),
    Row("accounts:password_reset_done", "GET", OPEN),
    Row("accounts:password_reset_confirm", "GET", OPEN, ("uidb64", "reset_token")),
    Row("accounts:password_reset_complete", "GET", OPEN),
    Row("accounts:account", "GET", SIGNED_IN),
    Row("accounts:account", "POST", SIGNED_IN, data={  # a wrong old password: the form again
        "old_password": "wrong", "new_password1": "x-9", "new_password2": "x-9"}),
    Row("accounts:sign_out_everywhere", "POST", MOVED),
    Row("accounts:language", "POST", MOVED, data={"language": "zh-hans"}),  # anyone may switch
    Row("accounts:time_zone", "POST", MOVED, data={"time_zone": "Asia/Shanghai"}),
    Row("accounts:tokens", "GET", SIGNED_IN),
    Row("accounts:tokens", "POST", SIGNED_IN, data={"name": "laptop"}),
    Row("accounts:token_revoke", "POST", (302, 404, 404, 404, 302), ("token_id",)),
    Row("accounts:team_new", "GET", SIGNED_IN),
    Row("accounts:team_new", "POST", MOVED, data={"name": "Initech"}),
    Row("accounts:team_switch", "POST", (302, 404, 302, 302, 302), ("team_id",)),
    Row("accounts:team_members", "GET", MEMBERS, ("team_id",)),
    Row("accounts:member_role", "POST", MANAGE_WRITE, ("team_id", "user_id"),
        {"role": "viewer"}),
    Row("accounts:member_remove", "POST", MANAGE_WRITE, ("team_id", "user_id")),
    Row("accounts:invitation_new", "POST", MANAGE, ("team_id",), {"role": "member"}),
    Row("accounts:invitation_revoke", "POST", MANAGE_WRITE, ("team_id", "invitation_id")),
    # The link is the secret: whoever holds it may see it and use it.
    Row("accounts:invitation", "GET", OPEN, ("token",)),
    Row("accounts:invitation", "POST", MOVED, ("token",)),
    Row("integrations:team_settings", "GET", MANAGE, ("team_id",)),
    Row("integrations:team_model", "POST", MANAGE_WRITE, ("team_id",), {"model": "{model_id}"}),
    Row("integrations:team_agent_handle", "POST", MANAGE_WRITE, ("team_id",),
        {"handle": "robo"}),
    Row("integrations:team_tools", "POST", MANAGE_WRITE, ("team_id",),
        {tool.name: "default" for tool in builtin_tools()}),
    Row("integrations:mcp_server_add", "POST", MANAGE_WRITE, ("team_id",),
        {**MCP_FORM, "name": "wiki"}),
    Row("integrations:mcp_server_edit", "GET", MANAGE, ("team_id", "mcp_server_id")),
    Row("integrations:mcp_server_edit", "POST", MANAGE_WRITE, ("team_id", "mcp_server_id"),
        MCP_FORM),
    Row("integrations:mcp_server_delete", "POST", MANAGE_WRITE, ("team_id", "mcp_server_id")),
    # Answers with the settings page and the outcome (here: the guard refuses loopback).
    Row("integrations:mcp_server_test", "POST", MANAGE, ("team_id", "mcp_server_id")),
    Row("integrations:mcp_catalog_enable", "POST", MANAGE_WRITE, ("team_id", "catalog_id")),
    Row("integrations:mcp_catalog_disable", "POST", MANAGE_WRITE, ("team_id", "catalog_id")),
    # A person-scoped sign-in (the team-scoped one is MANAGE: tests/integration/mcp/test_oauth).
    Row("integrations:mcp_sign_in", "GET", WRITERS, ("team_id", "oauth_server_id")),
    # Starting it refuses the loopback URL (the SSRF guard) and goes back to the page.
    Row("integrations:mcp_sign_in", "POST", (302, 404, 403, 302, 302),
        ("team_id", "oauth_server_id")),
    Row("integrations:mcp_sign_out", "POST", (302, 404, 403, 302, 302),  # "not signed in"
        ("team_id", "oauth_server_id")),
    Row("integrations:mcp_sign_ins", "GET", MEMBERS, ("team_id",)),
    # Without a state of one's own, every callback is refused.
    Row("integrations:mcp_oauth_callback", "GET", (302, 400, 400, 400, 400),
        query={"state": "forged", "code": "x"}),
    # The wiki: members of any role read; members write; owners and admins also delete.
    Row("wiki:tree", "GET", MEMBERS, ("team_id",)),
    Row("wiki:page", "GET", MEMBERS, ("team_id", "path")),
    Row("wiki:page", "GET", MEMBERS, ("team_id", "folder")),
    Row("wiki:page", "GET", MEMBERS, ("team_id", "attachment")),
    Row("wiki:search", "GET", MEMBERS, ("team_id",), query={"q": "Welcome"}),
    Row("wiki:history", "GET", MEMBERS, ("team_id", "path")),
    Row("wiki:diff", "GET", MEMBERS, ("team_id", "path"),
        query={"from": "{first_commit}", "to": "{home_commit}"}),
    Row("wiki:new", "GET", WIKI_WRITE, ("team_id",), query={"path": "Fresh"}),
    Row("wiki:edit", "GET", WIKI_WRITE_PAGE, ("team_id", "path")),
    Row("wiki:edit", "POST", WIKI_WRITE, ("team_id", "path"), {
        "content": "# Home\n\nEdited.\n", "expected_blob": "{home_blob}", "message": "m"}),
    Row("wiki:preview", "POST", WIKI_WRITE_PAGE, ("team_id",), {"content": "**hi**"}),
    Row("wiki:upload", "POST", WIKI_UPLOAD, ("team_id",), {"name": "x.png"}),
    Row("wiki:restore", "POST", WIKI_WRITE, ("team_id", "path"), {"rev": "{first_commit}"}),
    Row("wiki:rename", "GET", WIKI_WRITE_PAGE, ("team_id", "path")),
    Row("wiki:rename", "POST", WIKI_WRITE, ("team_id", "path"),
        {"to": "Start.md", "expected_blob": "{home_blob}"}),
    Row("wiki:delete", "GET", MANAGE, ("team_id", "path")),
    Row("wiki:delete", "POST", MANAGE_WRITE, ("team_id", "path"),
        {"expected_blob": "{home_blob}"}),
]


def _row_id(row: Row) -> str:
    return f"{row.method} {row.name}" + (f" {row.kwargs[-1]}" if row.name == "wiki:page" else "")


@pytest.fixture
def ids(acme, globex, alice, dave, model, settings, tmp_path) -> dict[str, Any]:
    settings.WIKI_DIR = tmp_path / "wiki"  # this test's repositories alone
    first = page_save(team=acme, by=alice, path="Home.md", content="# Home\n",
                      expected_blob=None, message="Start")
    home = page_save(team=acme, by=alice, path="Home.md", content="# Home\n\nWelcome.\n",
                     expected_blob=first.blob, message="Welcome")
    page_save(team=acme, by=alice, path="Ops/Runbook.md", content="# Runbook\n",
              expected_blob=None, message="")
    page_save(team=acme, by=alice, path="_files/dot.png", content=b"\x89PNG\r\n",
              expected_blob=None, message="")
    _, raw_invitation = invitation_create(team=acme, role="member", by=alice)
    invitation = acme.invitations.get()
    token, _ = api_token_create(user=alice, name="alice's")
    mcp_server = McpServerConfig.objects.create(  # stored as is: "test" fails fast (loopback)
        team=acme, name="docs", transport="streamable_http", url="http://127.0.0.1:9/mcp")
    catalog = McpServerConfig.objects.create(name="shared", transport="stdio", catalog=True,
                                             command="/nonexistent/mcp-server")
    oauth_server = McpServerConfig.objects.create(
        team=acme, name="tracker", transport="streamable_http", url="http://127.0.0.1:9/mcp",
        sign_in="person")
    return {"team_id": acme.pk, "user_id": dave.pk, "invitation_id": invitation.pk,
            "token_id": token.pk, "token": raw_invitation, "model_id": model.pk,
            "uidb64": "MQ", "reset_token": "not-a-token", "mcp_server_id": mcp_server.pk,
            "catalog_id": catalog.pk, "oauth_server_id": oauth_server.pk, "path": "Home.md",
            "folder": "Ops/",
            "attachment": "_files/dot.png", "home_blob": home.blob,
            "home_commit": home.commit, "first_commit": first.commit}


@pytest.fixture
def client_as(signed_in, alice, bob, carol, charlie):
    people = {"alice": alice, "bob": bob, "carol": carol, "charlie": charlie}
    return lambda persona: Client() if persona == "anonymous" else signed_in(people[persona])


def _call(client: Client, row: Row, ids: dict[str, Any]):
    url = reverse(row.name, kwargs={_kwarg(name): ids[name] for name in row.kwargs})
    data = {key: ids[value[1:-1]] if value.startswith("{") else value
            for key, value in row.data.items()}
    if row.query:
        url += "?" + urlencode({key: ids[value[1:-1]] if value.startswith("{") else value
                                for key, value in row.query.items()})
    return client.generic(row.method, url, data=urlencode(data),
                          content_type="application/x-www-form-urlencoded")


def _kwarg(name: str) -> str:
    if name in ("mcp_server_id", "catalog_id", "oauth_server_id"):
        return "server_id"
    if name in ("folder", "attachment"):
        return "path"
    return "token" if name == "reset_token" else name


@pytest.mark.django_db
@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("row", MATRIX, ids=_row_id)
def test_isolation_matrix(row: Row, persona: str, client_as, ids) -> None:
    client = client_as(persona)
    response = _call(client, row, ids)
    expected = row.statuses[PERSONAS.index(persona)]
    assert response.status_code == expected, response.content[:400]
    if response.headers.get("Content-Type", "").startswith("text/html") and response.content:
        assert_no_inline_code(response)
    if expected == 404 and persona == "charlie":
        missing = _call(client, row, {**ids, **MISSING})
        assert missing.status_code == 404
        assert without_csrf(missing.content) == without_csrf(response.content)


def _patterns() -> set[str]:
    """Every URL name of the account, team, settings and wiki pages, and the home page."""
    names = {"home"}
    for module in (account_urls, integration_urls, wiki_urls):
        patterns: list[URLPattern] = module.urlpatterns
        names |= {f"{module.app_name}:{pattern.name}" for pattern in patterns}
    # git clone takes a token, never a session: its persona rows are in
    # tests/integration/wiki/test_git_http.py and test_git_clone.py.
    return names - {"wiki:git"}


def test_every_page_has_a_row() -> None:
    assert _patterns() == {row.name for row in MATRIX}


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted({row.name for row in MATRIX
                                         if {r.method for r in MATRIX if r.name == row.name}
                                         == {"POST"}}))
def test_writes_refuse_get(name: str, client_as, ids) -> None:
    """A page that changes something only does so on POST: a GET (a link, an image tag
    elsewhere) answers 405."""
    row = next(row for row in MATRIX if row.name == name)
    response = _call(client_as("alice"), Row(row.name, "GET", OPEN, row.kwargs), ids)
    assert response.status_code == 405
