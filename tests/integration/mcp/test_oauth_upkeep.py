"""Keeping MCP sign-ins right after they are made (issue 23's review): the redirect URI on the
configured public origin, "Test connection" with the sign-in a run would use, the members' own
sign-ins page, revocation when a server is deleted or its URL changes, URLs compared normalized,
and a second sign-out. Against the real OAuth-protected SDK server (``protected``)."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.db import connection

from apps.accounts.models import Team, User
from apps.integrations import mcp_oauth
from apps.integrations.mcp_oauth import NotSignedIn, run_access_token
from apps.integrations.mcp_services import HttpServerInput, mcp_server_update
from apps.integrations.models import McpOAuthConnection, McpOAuthFlow, McpServerConfig, McpSignIn
from tests.integration.mcp.oauth_kit import oauth_server, sign_in, start
from tests.services.oauth_mcp import AuthServerState

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("allow_loopback")]
Served = tuple[str, AuthServerState]
PUBLIC = "https://confab.example.com"


# -- (4) the redirect URI ----------------------------------------------------------------------
def test_the_redirect_uri_is_on_the_public_url_whatever_host_or_scheme_the_request_had(
        acme: Team, bob: User, signed_in: Any, protected: Served, settings: Any) -> None:
    url, state = protected
    settings.CONFAB = {**settings.CONFAB, "PUBLIC_URL": PUBLIC}
    server = oauth_server(acme, url)
    client = signed_in(bob)
    client.defaults["HTTP_HOST"] = "localhost:8000"  # what this person typed
    authorization = start(client, acme, server)
    callback = f"{PUBLIC}/mcp/oauth/callback/"
    assert parse_qs(urlsplit(authorization).query)["redirect_uri"] == [callback]
    state.next_subject = "remote-bob"
    back = urlsplit(httpx2.get(authorization, follow_redirects=False).headers["location"])
    assert f"{back.scheme}://{back.netloc}{back.path}" == callback
    response = client.get(f"{back.path}?{back.query}")  # the proxy passes it on to confab
    assert response.status_code == 302
    assert McpOAuthConnection.objects.get().user == bob


# -- (5) test connection -----------------------------------------------------------------------
def test_test_connection_uses_the_sign_in_a_run_would_use_or_says_sign_in_first(
        acme: Team, alice: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    team_server = oauth_server(acme, url, sign_in=McpSignIn.TEAM, name="teamwide")
    own_server = oauth_server(acme, url, name="mine")
    client = signed_in(alice)

    def check(server: McpServerConfig) -> str:
        page = client.post(f"/teams/{acme.pk}/settings/mcp/{server.pk}/test/")
        assert page.status_code == 200
        return page.content.decode()

    assert "it needs a sign-in (the team&#x27;s): sign in first" in check(team_server)
    assert "it needs a sign-in (your own): sign in first" in check(own_server)
    sign_in(client, acme, team_server, state, "remote-team")
    sign_in(client, acme, own_server, state, "remote-alice")
    for server in (team_server, own_server):
        page = check(server)
        assert f"Test connection of {server.name}:</strong> connected" in page
        assert "<code>whoami</code>" in page
        assert McpOAuthConnection.objects.get(server=server).access_token not in page


# -- (6) the members' own sign-ins -------------------------------------------------------------
def test_members_find_their_own_sign_ins_and_sign_in_and_out_there(
        acme: Team, bob: User, carol: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    own = oauth_server(acme, url)
    oauth_server(acme, url, sign_in=McpSignIn.TEAM, name="teamwide")  # an owner's business
    client = signed_in(bob)
    page_url = f"/teams/{acme.pk}/mcp/sign-ins/"
    assert f'href="{page_url}"' in client.get("/rooms/").content.decode()  # the menu
    page = client.get(page_url).content.decode()
    assert "tracker" in page and "teamwide" not in page
    assert f'href="/teams/{acme.pk}/mcp/{own.pk}/sign-in/">Sign in</a>' in page
    sign_in(client, acme, own, state, "remote-bob")
    sign_in_page = client.get(f"/teams/{acme.pk}/mcp/{own.pk}/sign-in/").content.decode()
    assert f'href="{page_url}"' in sign_in_page  # where the run's "Sign in" notice leads
    page = client.get(page_url).content.decode()
    assert "signed in as bob, expires" in page
    assert f'action="/teams/{acme.pk}/mcp/{own.pk}/sign-out/"' in page
    assert McpOAuthConnection.objects.get().access_token not in page
    viewer = signed_in(carol).get(page_url).content.decode()
    assert "Viewers do not use the team’s tools" in viewer and "tracker" not in viewer


# -- (9) revocation when sign-ins end with their server ----------------------------------------
def test_deleting_a_server_revokes_its_sign_ins_at_the_authorization_server(
        acme: Team, alice: User, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    owner = signed_in(alice)
    sign_in(owner, acme, server, state, "remote-alice")
    sign_in(signed_in(bob), acme, server, state, "remote-bob")
    refresh_tokens = sorted(sealed.open() for sealed in McpOAuthConnection.objects.values_list(
        "refresh_token", flat=True))
    response = owner.post(f"/teams/{acme.pk}/settings/mcp/{server.pk}/delete/", follow=True)
    assert "The MCP server is deleted." in response.content.decode()
    assert sorted(state.revoked) == refresh_tokens
    assert state.access == {} and state.refresh == {}  # both grants ended at the server
    assert McpOAuthConnection.objects.count() == 0


def test_a_revocation_that_fails_does_not_block_the_delete_and_logs_no_token(
        acme: Team, alice: User, signed_in: Any, protected: Served,
        caplog: pytest.LogCaptureFixture) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    owner = signed_in(alice)
    sign_in(owner, acme, server, state, "remote-alice")
    stored = McpOAuthConnection.objects.get()

    async def refuse(token: object) -> None:
        raise RuntimeError("the revocation store is down")

    state.revoke_token = refuse  # type: ignore[method-assign]  # the server answers 500
    with caplog.at_level(logging.WARNING, logger="apps.integrations.mcp_oauth"):
        response = owner.post(f"/teams/{acme.pk}/settings/mcp/{server.pk}/delete/",
                              follow=True)
    assert "The MCP server is deleted." in response.content.decode()
    assert not McpServerConfig.objects.filter(pk=server.pk).exists()
    assert McpOAuthConnection.objects.count() == 0
    assert f"MCP sign-in #{stored.pk} (server #{server.pk}) not revoked" in caplog.text
    assert stored.access_token not in caplog.text and stored.refresh_token not in caplog.text


def test_sign_ins_whose_tokens_no_key_opens_still_end_with_a_delete_or_a_sign_out(
        acme: Team, alice: User, signed_in: Any, protected: Served) -> None:
    """A Fernet key removed before ``rotate_secrets``: the tokens cannot be revoked (nor
    read), so ending the sign-in forgets them, as when the server does not answer."""
    url, state = protected
    owner = signed_in(alice)
    deleted, signed_out = oauth_server(acme, url), oauth_server(acme, url, name="other")
    for server in (deleted, signed_out):
        sign_in(owner, acme, server, state, f"remote-{server.name}")
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {McpOAuthConnection._meta.db_table} SET client_info = %s, "
                       "access_token = %s", ["gAAAAABnot-a-token", "gAAAAABnot-a-token"])
    response = owner.post(f"/teams/{acme.pk}/mcp/{signed_out.pk}/sign-out/", follow=True)
    assert response.status_code == 200
    assert not McpOAuthConnection.objects.filter(server=signed_out).exists()
    response = owner.post(f"/teams/{acme.pk}/settings/mcp/{deleted.pk}/delete/", follow=True)
    assert "The MCP server is deleted." in response.content.decode()
    assert McpOAuthConnection.objects.count() == 0
    assert state.revoked == []


def test_a_sign_in_with_a_client_secret_no_key_opens_says_so(
        acme: Team, alice: User, signed_in: Any, protected: Served) -> None:
    url, _ = protected
    server = oauth_server(acme, url, oauth_client_id="cid", oauth_client_secret="secret-1")
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {McpServerConfig._meta.db_table} SET oauth_client_secret = %s",
                       ["gAAAAABnot-a-token"])
    response = signed_in(alice).post(f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/", follow=True)
    assert response.status_code == 200
    assert "cannot be decrypted with CONFAB_FERNET_KEYS" in response.content.decode()
    assert not McpOAuthFlow.objects.exists()


def test_a_url_change_that_drops_the_sign_ins_revokes_them(
        acme: Team, alice: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    sign_in(signed_in(alice), acme, server, state, "remote-alice")
    stored = McpOAuthConnection.objects.get()
    same = url.replace("/mcp", "/x/../mcp")  # the same resource, written another way
    mcp_server_update(team=acme, server_id=server.pk, by=alice, data=_http(server, same))
    assert McpOAuthConnection.objects.count() == 1 and state.revoked == []
    mcp_server_update(team=acme, server_id=server.pk, by=alice,
                      data=_http(server, url.replace("/mcp", "/other")))
    assert McpOAuthConnection.objects.count() == 0
    assert state.revoked == [stored.refresh_token]


def _http(server: McpServerConfig, url: str) -> HttpServerInput:
    return HttpServerInput(name=server.name, transport=server.transport, url=url,
                           sign_in=server.sign_in)


# -- (10) URLs compared normalized -------------------------------------------------------------
@pytest.mark.parametrize("tail", ["/../evil", "/%2e%2e/evil", "/%2E./evil", "/.%2e/evil/x"])
def test_a_url_with_dot_segments_out_of_the_resource_never_gets_the_token(
        tail: str, acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    sign_in(signed_in(bob), acme, server, state, "remote-bob")
    McpServerConfig.objects.filter(pk=server.pk).update(url=url + tail)  # the row, as stored
    server.refresh_from_db()
    with pytest.raises(NotSignedIn):
        run_access_token(server, acme, bob)
    assert McpOAuthConnection.objects.count() == 0


def test_normalized_url_follows_rfc_3986() -> None:
    normalized_url = mcp_oauth.normalized_url
    assert normalized_url("http://Example.COM:80/a/./b/../c/%7Euser/%2e%2E/%7e") == (
        "http://example.com/a/c/~")
    assert normalized_url("https://h/mcp/%2Fx") == "https://h/mcp/%2Fx"  # reserved: kept


# -- (11) a second sign-out --------------------------------------------------------------------
def test_a_second_sign_out_answers_already_signed_out(
        acme: Team, bob: User, signed_in: Any, protected: Served) -> None:
    url, state = protected
    server = oauth_server(acme, url)
    client = signed_in(bob)
    sign_in(client, acme, server, state, "remote-bob")
    sign_out = f"/teams/{acme.pk}/mcp/{server.pk}/sign-out/"
    assert "Signed out." in client.post(sign_out, follow=True).content.decode()
    again = client.post(sign_out)
    assert again.status_code == 302
    assert again["Location"] == f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/"
    page = client.get(again["Location"]).content.decode()
    assert "You are not signed in (already signed out)." in page
    assert "Not signed in." in page
