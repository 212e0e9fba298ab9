"""A real OAuth-protected MCP server for the sign-in tests, written with the MCP SDK's server-side
auth support (``mcp.server.auth``): one loopback origin that is both the authorization server
(metadata, dynamic registration, /authorize, /token, /revoke) and the resource server
(protected-resource metadata, bearer tokens required on ``/mcp``).

:class:`AuthServerState` is the in-memory provider: it approves every authorization request at
once for the person named by ``next_subject`` (the "consent page" of a real server is not what
these tests are about), issues access tokens that live ``access_ttl_s`` seconds on its
injectable ``clock``, rotates refresh tokens and records what happened (``issued``,
``refreshed``, ``revoked``) so tests can assert it. Tool ``whoami`` answers the subject of the
token that called it, so a test sees whose sign-in a run used.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp_types import ToolAnnotations

SCOPE = "tools"


@dataclass
class AuthServerState:
    """The authorization server's memory and the knobs tests turn (see the module doc)."""

    clock: Callable[[], float] = time.time
    access_ttl_s: int = 3600
    next_subject: str = "remote-alice"
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    issued: list[str] = field(default_factory=list)
    refreshed: int = 0
    revoked: list[str] = field(default_factory=list)
    resources: list[str | None] = field(default_factory=list)

    # -- OAuthAuthorizationServerProvider --------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.resources.append(params.resource)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [SCOPE], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, resource=params.resource,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            subject=self.next_subject)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._issue(client.client_id, authorization_code.scopes,
                           authorization_code.resource, authorization_code.subject)

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        del self.refresh[refresh_token.token]
        self.refreshed += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes,
                           refresh_token.resource, refresh_token.subject)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is None or (access.expires_at or 0) < self.clock():
            return None
        return access.model_copy(update={"expires_at": None})  # expiry judged on our clock

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.revoked.append(token.token)
        subject = token.subject
        for store in (self.access, self.refresh):
            for key in [k for k, v in store.items() if v.subject == subject
                        and v.client_id == token.client_id]:
                del store[key]

    def _issue(self, client_id: str, scopes: list[str], resource: str | None,
               subject: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(16)}", f"rt-{secrets.token_urlsafe(16)}"
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, resource=resource,
            subject=subject, expires_at=int(self.clock()) + self.access_ttl_s)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource, subject=subject)
        self.issued.append(access)
        return OAuthToken(access_token=access, expires_in=self.access_ttl_s,
                          scope=" ".join(scopes), refresh_token=refresh)


def build_oauth_server(base: str, state: AuthServerState) -> MCPServer:
    """The MCP server at ``base`` (``http://127.0.0.1:<port>``; endpoint ``<base>/mcp``)."""
    settings = AuthSettings(
        issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=True,
        required_scopes=[SCOPE], revocation_options=RevocationOptions(enabled=True),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]))
    server = MCPServer("confab-oauth-test-server", auth_server_provider=state, auth=settings,
                       log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def whoami() -> str:
        """Say whose sign-in called this tool."""
        token = get_access_token()
        return f"signed in as {token.subject if token else 'nobody'}"

    return server


@contextmanager
def oauth_mcp_server(state: AuthServerState | None = None) -> Iterator[tuple[str, AuthServerState]]:
    """Serve the server on 127.0.0.1 from a thread of its own (synchronous views and async
    tests can both reach it); yields ``(endpoint URL, state)``."""
    state = state or AuthServerState()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = build_oauth_server(base, state).streamable_http_app()
    http = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    box: dict[str, Any] = {}

    def run() -> None:
        box["loop"] = asyncio.new_event_loop()
        box["loop"].run_until_complete(http.serve(sockets=[sock]))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not http.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert http.started, "the OAuth MCP test server did not start"
    try:
        yield f"{base}/mcp", state
    finally:
        http.should_exit = True
        thread.join(15)
        sock.close()
