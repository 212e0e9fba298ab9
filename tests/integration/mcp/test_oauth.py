"""MCP servers that need an OAuth sign-in (issue 23), through confab's own views and services,
against a real OAuth-protected MCP server written with the SDK's server-side auth: sign-in
(discovery, registration, PKCE, resource indicator), storage (encrypted), refresh before expiry
(the ``now`` clock), sign-out (revocation), refusals (a bad or foreign state, another redirect
URI), and isolation rows (whose token a run of whom gets)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.exceptions import ValidationError
from django.db import connection as db
from django.test import Client
from django.utils import timezone
from mcp.shared.auth import OAuthClientInformationFull

from apps.accounts.models import Team, User
from apps.common.errors import ApplicationError
from apps.engine.events import WarningEvent
from apps.integrations.mcp_builders import mcp_specs
from apps.integrations.mcp_oauth import (
    REFRESH_MARGIN,
    NotSignedIn,
    run_access_token,
    sign_in_finish,
)
from apps.integrations.models import (
    McpOAuthConnection,
    McpOAuthFlow,
    McpServerConfig,
    McpSignIn,
    TeamMcpEnablement,
)
from tests.integration.mcp.oauth_kit import authorize, oauth_server, sign_in, start
from tests.services.oauth_mcp import SCOPE, AuthServerState

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_loopback")]
Served = tuple[str, AuthServerState]


def raw_row(pk: int) -> str:
    with db.cursor() as cursor:
        cursor.execute("SELECT access_token, refresh_token, client_info FROM "
                       "integrations_mcpoauthconnection WHERE id = %s", [pk])
        return " ".join(cursor.fetchone())


def test_a_person_signs_in_and_the_tokens_are_stored_encrypted(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    client = signed_in(bob)
    authorization = start(client, acme, server)
    query = parse_qs(urlsplit(authorization).query)
    assert authorization.startswith(url.removesuffix("/mcp") + "/authorize?")
    assert query["code_challenge_method"] == ["S256"] and query["resource"] == [url]
    assert query["redirect_uri"] == ["http://testserver/mcp/oauth/callback/"]
    assert client.get(authorize(authorization, state, "remote-bob")).status_code == 302
    [stored] = McpOAuthConnection.objects.all()
    assert (stored.user, stored.team, stored.authorized_by) == (bob, acme, bob)
    assert stored.access_token == state.issued[-1]
    assert stored.expires_at is not None and stored.refresh_token
    raw = raw_row(stored.pk)
    assert stored.access_token not in raw and stored.refresh_token not in raw
    assert McpOAuthFlow.objects.count() == 0  # the flow was used up
    page = client.get(f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/").content.decode()
    assert "Signed in as bob, expires" in page and stored.access_token not in page


def test_the_team_settings_show_who_signed_in_and_sign_out(
        acme: Team, alice: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url, sign_in=McpSignIn.TEAM)
    client = signed_in(alice)
    page = client.get(f"/teams/{acme.pk}/settings/").content.decode()
    assert "not signed in" in page
    sign_in(client, acme, server, state, "remote-team")
    page = client.get(f"/teams/{acme.pk}/settings/").content.decode()
    stored = McpOAuthConnection.objects.get()
    assert "signed in as alice, expires" in page and "Sign out" in page
    assert stored.user is None and stored.access_token not in page


def test_sign_out_revokes_the_grant_at_the_server(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    client = signed_in(bob)
    sign_in(client, acme, server, state, "remote-bob")
    stored = McpOAuthConnection.objects.get()
    response = client.post(f"/teams/{acme.pk}/mcp/{server.pk}/sign-out/", follow=True)
    assert "Signed out." in response.content.decode()
    assert state.revoked == [stored.refresh_token]
    assert stored.access_token not in state.access  # the server no longer accepts it
    assert McpOAuthConnection.objects.count() == 0
    with pytest.raises(NotSignedIn):
        run_access_token(server, acme, bob)


def test_the_token_is_refreshed_before_it_expires(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    sign_in(signed_in(bob), acme, server, state, "remote-bob")
    stored = McpOAuthConnection.objects.get()
    assert stored.expires_at is not None
    early = stored.expires_at - REFRESH_MARGIN - timedelta(seconds=1)
    assert run_access_token(server, acme, bob, now=early) == stored.access_token
    assert state.refreshed == 0
    later = stored.expires_at - timedelta(seconds=30)  # inside the margin
    fresh = run_access_token(server, acme, bob, now=later)
    assert state.refreshed == 1 and fresh != stored.access_token and fresh in state.access
    stored.refresh_from_db()
    assert stored.access_token == fresh
    assert stored.expires_at == later + timedelta(seconds=state.access_ttl_s)


def test_a_refused_refresh_forgets_the_sign_in(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    sign_in(signed_in(bob), acme, server, state, "remote-bob")
    state.refresh.clear()  # the grant ended at the server (revoked there, or expired)
    with pytest.raises(NotSignedIn):
        run_access_token(server, acme, bob, now=timezone.now() + timedelta(days=1))
    assert McpOAuthConnection.objects.count() == 0


def test_a_bad_state_is_refused_and_the_stored_sign_in_stays(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    client = signed_in(bob)
    sign_in(client, acme, server, state, "remote-bob")
    before = McpOAuthConnection.objects.get()
    callback = authorize(start(client, acme, server), state, "remote-mallory")
    forged = callback.replace("state=", "state=x")
    response = client.get(forged)
    assert response.status_code == 400
    assert "not valid" in response.content.decode()
    assert McpOAuthConnection.objects.get().access_token == before.access_token
    assert client.get("/mcp/oauth/callback/?code=abc").status_code == 400  # no state at all


def test_a_state_works_once_and_only_for_the_session_that_started_it(
        acme: Team, alice: User, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    bobs = signed_in(bob)
    callback = authorize(start(bobs, acme, server), state, "remote-bob")
    assert signed_in(alice).get(callback).status_code == 400  # another person
    callback = authorize(start(bobs, acme, server), state, "remote-bob")
    assert signed_in(bob).get(callback).status_code == 400  # bob, another session
    callback = authorize(start(bobs, acme, server), state, "remote-bob")
    assert bobs.get(callback).status_code == 302
    assert bobs.get(callback).status_code == 400  # used
    assert McpOAuthConnection.objects.get().user == bob


def test_another_redirect_uri_or_an_error_answer_is_refused(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    client = signed_in(bob)
    params = parse_qs(urlsplit(authorize(start(client, acme, server), state, "b")).query)
    key = client.session.session_key
    with pytest.raises(ApplicationError, match="another address"):
        sign_in_finish(user=bob, session_key=key, redirect_uri="https://evil.example/cb/",
                       params={k: v[0] for k, v in params.items()})
    params = parse_qs(urlsplit(start(client, acme, server)).query)
    with pytest.raises(ApplicationError, match="did not sign you in"):
        sign_in_finish(user=bob, session_key=key,
                       redirect_uri="http://testserver/mcp/oauth/callback/",
                       params={"state": params["state"][0], "error": "access_denied"})
    assert McpOAuthConnection.objects.count() == 0


def test_an_expired_flow_is_refused(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    client = signed_in(bob)
    params = parse_qs(urlsplit(authorize(start(client, acme, server), state, "b")).query)
    with pytest.raises(ApplicationError, match="not valid"):
        sign_in_finish(user=bob, session_key=client.session.session_key,
                       redirect_uri="http://testserver/mcp/oauth/callback/",
                       params={k: v[0] for k, v in params.items()},
                       now=timezone.now() + timedelta(minutes=11))
    abandoned = McpOAuthFlow.objects.filter(pk=start_flow(client, acme, server))
    abandoned.update(created_at=timezone.now() - timedelta(minutes=11))
    start(client, acme, server)
    assert not abandoned.exists() and McpOAuthFlow.objects.count() == 1  # cleared on start


def start_flow(client: Client, team: Team, server: McpServerConfig) -> int:
    start(client, team, server)
    return McpOAuthFlow.objects.latest("created_at").pk


# -- whose token a run gets (isolation rows) ---------------------------------------------------
def test_a_run_gets_the_starters_own_token_never_another_members(
        acme: Team, alice: User, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    sign_in(signed_in(alice), acme, server, state, "remote-alice")
    alices = McpOAuthConnection.objects.get(user=alice).access_token
    [spec] = mcp_specs(acme, user=alice)
    assert spec.headers == {"Authorization": f"Bearer {alices}"}
    notices: list[WarningEvent] = []
    assert mcp_specs(acme, user=bob, problems=notices) == []
    [notice] = notices
    assert "'tracker' is skipped" in notice.message and alices not in notice.message
    assert notice.link == f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/"
    assert notice.link_text == "Sign in"
    assert mcp_specs(acme, user=None, problems=[]) == []  # a run nobody started: no one's


def test_a_team_sign_in_serves_every_member_and_no_other_team(
        acme: Team, globex: Team, alice: User, bob: User, charlie: User, signed_in: Any,
        protected: Served) -> None:
    url, state = protected
    catalog = oauth_server(None, url, sign_in=McpSignIn.TEAM, name="shared")
    for team in (acme, globex):
        TeamMcpEnablement.objects.create(team=team, server=catalog)
    sign_in(signed_in(alice), acme, catalog, state, "remote-acme")
    token = McpOAuthConnection.objects.get().access_token
    assert [s.headers for s in mcp_specs(acme, user=bob)] == [
        {"Authorization": f"Bearer {token}"}]
    notices: list[WarningEvent] = []
    assert mcp_specs(globex, user=charlie, problems=notices) == []
    assert "nobody has signed in to it for the team" in notices[0].message


def test_a_changed_url_never_gets_the_old_servers_token(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    sign_in(signed_in(bob), acme, server, state, "remote-bob")
    server.url = "http://127.0.0.1:9/other/mcp"
    server.save()
    with pytest.raises(NotSignedIn):
        run_access_token(server, acme, bob)
    assert McpOAuthConnection.objects.count() == 0


@pytest.mark.parametrize(("who", "scope", "status"), [
    ("charlie", McpSignIn.PERSON, 404),  # another team: like a missing server
    ("carol", McpSignIn.PERSON, 403),  # a viewer
    ("bob", McpSignIn.TEAM, 403),  # a member, for the team's sign-in
    ("dana", McpSignIn.TEAM, 200),  # an admin
    ("bob", McpSignIn.PERSON, 200),
])
def test_who_may_open_a_sign_in_page(
        acme: Team, request: pytest.FixtureRequest, signed_in: Any,
        who: str, scope: str, status: int, protected: Served) -> None:
    url, _ = protected
    server = oauth_server(acme, url, sign_in=scope)
    client = signed_in(request.getfixturevalue(who))
    assert client.get(f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/").status_code == status
    if status != 200:
        assert client.post(f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/").status_code == status
        assert client.post(f"/teams/{acme.pk}/mcp/{server.pk}/sign-out/").status_code == status
    assert McpOAuthFlow.objects.count() == 0


def test_a_server_without_sign_in_or_not_enabled_has_no_sign_in_page(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, _ = protected
    plain = oauth_server(acme, url, sign_in=McpSignIn.NONE, name="plain")
    catalog = oauth_server(None, url, name="shared")  # not enabled for Acme
    client = signed_in(bob)
    for server in (plain, catalog):
        assert client.get(f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/").status_code == 404
    assert client.get(f"/teams/{acme.pk}/mcp/999999/sign-in/").status_code == 404


def test_a_loopback_server_is_refused_by_the_ssrf_guard(
        acme: Team, bob: User, signed_in: Any, protected: Served, settings: Any) -> None:
    url, _ = protected
    server = oauth_server(acme, url)
    settings.CONFAB = {**settings.CONFAB, "ALLOW_PRIVATE_NETWORK": False}
    response = signed_in(bob).post(f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/", follow=True)
    assert "The sign-in cannot start" in response.content.decode()
    assert "loopback" in response.content.decode()
    assert McpOAuthFlow.objects.count() == 0


def test_a_configured_client_id_and_secret_are_used_instead_of_registration(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    state.clients["confab-static"] = OAuthClientInformationFull(
        client_id="confab-static", client_secret="static-s3cret-value",
        redirect_uris=["http://testserver/mcp/oauth/callback/"],
        token_endpoint_auth_method="client_secret_post", scope=SCOPE,
        grant_types=["authorization_code", "refresh_token"])
    server = oauth_server(acme, url, oauth_client_id="confab-static",
                          oauth_client_secret="static-s3cret-value")
    sign_in(signed_in(bob), acme, server, state, "remote-bob")
    assert list(state.clients) == ["confab-static"]  # nothing registered
    stored = McpOAuthConnection.objects.get()
    assert state.access[stored.access_token].client_id == "confab-static"


def test_owners_set_the_sign_in_and_a_write_only_client_secret_on_the_page(
        acme: Team, alice: User, signed_in: Any) -> None:
    client = signed_in(alice)
    form = {"name": "tracker", "transport": "streamable_http", "url": "https://mcp.example.com/mcp",
            "enabled": "on", "connect_timeout_s": "15", "call_timeout_s": "120",
            "sign_in": "person", "oauth_client_id": "cid", "oauth_client_secret": "csecret-123"}
    assert client.post(f"/teams/{acme.pk}/settings/mcp/", form).status_code == 302
    server = McpServerConfig.objects.get(name="tracker")
    assert (server.sign_in, server.oauth_client_id) == ("person", "cid")
    assert server.oauth_client_secret == "csecret-123"
    page = client.get(f"/teams/{acme.pk}/settings/mcp/{server.pk}/").content.decode()
    assert "csecret-123" not in page
    edit = {**form, "oauth_client_secret": ""}  # blank keeps it
    assert client.post(f"/teams/{acme.pk}/settings/mcp/{server.pk}/", edit).status_code == 302
    server.refresh_from_db()
    assert server.oauth_client_secret == "csecret-123"
    with db.cursor() as cursor:
        cursor.execute("SELECT oauth_client_secret FROM integrations_mcpserverconfig "
                       "WHERE id = %s", [server.pk])
        assert "csecret-123" not in cursor.fetchone()[0]


def test_only_http_servers_sign_in_and_a_secret_needs_its_client_id(acme: Team) -> None:
    stdio = McpServerConfig(name="local", transport="stdio", team=acme, command="/bin/true",
                            sign_in="person")
    with pytest.raises(ValidationError, match="Only HTTP servers sign in"):
        stdio.full_clean()
    http = McpServerConfig(name="remote", transport="streamable_http", team=acme,
                           url="https://mcp.example.com/mcp", sign_in="team",
                           oauth_client_secret="x")
    with pytest.raises(ValidationError, match="needs its client id"):
        http.full_clean()
