"""Helpers of the MCP sign-in tests (the OAuth-protected SDK server is the ``protected`` fixture
of conftest.py): server rows that need a sign-in, and a sign-in driven through confab's own views
with the test playing the browser (it follows the authorization server's redirect itself)."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlsplit

import httpx2
from django.test import Client

from apps.accounts.models import Team
from apps.integrations.models import McpServerConfig, McpSignIn, McpTransport
from tests.services.oauth_mcp import AuthServerState


def oauth_server(team: Team | None, url: str, sign_in: str = McpSignIn.PERSON,
                 name: str = "tracker", **fields: Any) -> McpServerConfig:
    """An HTTP server row of ``team`` (None: a catalog entry) that needs a sign-in."""
    server = McpServerConfig(name=name, transport=McpTransport.STREAMABLE_HTTP, team=team,
                             catalog=team is None, url=url, sign_in=sign_in, **fields)
    server.full_clean()
    server.save()
    return server


def start(client: Client, team: Team, server: McpServerConfig) -> str:
    """POST "Sign in" as ``client``; the authorization URL confab sends the browser on to."""
    response = client.post(f"/teams/{team.pk}/mcp/{server.pk}/sign-in/")
    assert response.status_code == 200, response.content[:500]
    found = re.search(r'<a id="authorize" href="([^"]+)"', response.content.decode())
    assert found, response.content[:500]
    return html.unescape(found.group(1))


def authorize(url: str, state: AuthServerState, subject: str) -> str:
    """The browser's visit to the authorization endpoint (the server approves ``subject`` at
    once); the path and query of confab's callback it redirects to."""
    state.next_subject = subject
    answer = httpx2.get(url, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    back = urlsplit(answer.headers["location"])
    assert back.netloc == "testserver" and back.path == "/mcp/oauth/callback/"
    return f"{back.path}?{back.query}"


def sign_in(client: Client, team: Team, server: McpServerConfig, state: AuthServerState,
            subject: str) -> None:
    """The whole sign-in of ``client``'s person as ``subject`` at the server."""
    callback = authorize(start(client, team, server), state, subject)
    response = client.get(callback)
    assert response.status_code == 302, response.content[:500]
    assert response["Location"] == f"/teams/{team.pk}/mcp/{server.pk}/sign-in/"
