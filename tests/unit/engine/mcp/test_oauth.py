"""The engine's OAuth steps (apps.engine.mcp.oauth) against a real OAuth-protected MCP server
written with the SDK's server-side auth (tests/services/oauth_mcp.py), without a browser: the
test plays the browser by following the authorization endpoint's redirect itself."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from apps.engine.mcp import oauth
from apps.engine.mcp.oauth import AuthorizationServer, OAuthFlowError, OAuthTokenError
from apps.engine.tools.net import NetworkPolicy, UrlRefused, guarded_client
from tests.services.oauth_mcp import SCOPE, AuthServerState, oauth_mcp_server
from tests.unit.engine.mcp.kit import serve_app

LOOPBACK = NetworkPolicy(allow_private_network=True)
REDIRECT = "https://confab.example/mcp/oauth/callback/"


@pytest.fixture
def protected() -> Iterator[tuple[str, AuthServerState]]:
    with oauth_mcp_server() as served:
        yield served


async def sign_in(url: str) -> tuple[AuthorizationServer, oauth.OAuthClientInformationFull,
                                     oauth.OAuthToken]:
    async with guarded_client(LOOPBACK) as client:
        server = await oauth.discover(url, client, LOOPBACK)
        info = await oauth.register(server, REDIRECT, "confab test", client)
        authorize, state, verifier = oauth.authorization_request(server, info, REDIRECT)
        answer = await client.get(authorize)  # the browser's visit; the server approves at once
        assert answer.status_code == 302
        back = parse_qs(urlsplit(answer.headers["location"]).query)
        assert back["state"] == [state]
        token = await oauth.exchange_code(server, info, code=back["code"][0],
                                          code_verifier=verifier, redirect_uri=REDIRECT,
                                          client=client)
    return server, info, token


async def test_discovery_finds_the_authorization_server_from_the_resource_metadata(
        protected: tuple[str, AuthServerState]) -> None:
    url, _ = protected
    async with guarded_client(LOOPBACK) as client:
        server = await oauth.discover(url, client, LOOPBACK)
    base = url.removesuffix("/mcp")
    assert server.resource == url
    assert server.scope == SCOPE
    assert str(server.metadata.token_endpoint) == f"{base}/token"
    assert str(server.metadata.revocation_endpoint) == f"{base}/revoke"
    assert AuthorizationServer.from_json(server.to_json()) == server


async def test_sign_in_gives_tokens_for_this_resource_with_pkce(
        protected: tuple[str, AuthServerState]) -> None:
    url, state = protected
    _, info, token = await sign_in(url)
    assert token.access_token in state.access
    assert state.access[token.access_token].resource == url  # RFC 8707 reached the server
    assert state.resources == [url]
    assert token.refresh_token and token.expires_in == state.access_ttl_s
    assert info.client_id in state.clients


async def test_refresh_rotates_the_tokens_and_revoke_ends_the_grant(
        protected: tuple[str, AuthServerState]) -> None:
    url, state = protected
    server, info, first = await sign_in(url)
    async with guarded_client(LOOPBACK) as client:
        second = await oauth.refresh(server, info, first, client)
        assert second.access_token != first.access_token and state.refreshed == 1
        assert await oauth.revoke(server, info, second, client) is True
        assert state.revoked == [second.refresh_token]
        with pytest.raises(OAuthTokenError, match="invalid_grant"):
            await oauth.refresh(server, info, second, client)
    assert second.access_token not in state.access


async def test_a_wrong_code_verifier_is_refused(protected: tuple[str, AuthServerState]) -> None:
    url, _ = protected
    async with guarded_client(LOOPBACK) as client:
        server = await oauth.discover(url, client, LOOPBACK)
        info = await oauth.register(server, REDIRECT, "confab test", client)
        authorize, _, _ = oauth.authorization_request(server, info, REDIRECT)
        code = parse_qs(urlsplit((await client.get(authorize)).headers["location"]).query)
        with pytest.raises(OAuthTokenError, match="invalid_grant"):
            await oauth.exchange_code(server, info, code=code["code"][0],
                                      code_verifier="x" * 64, redirect_uri=REDIRECT,
                                      client=client)


async def test_the_ssrf_guard_refuses_a_loopback_server_by_default(
        protected: tuple[str, AuthServerState]) -> None:
    url, _ = protected
    async with guarded_client(NetworkPolicy()) as client:
        with pytest.raises(UrlRefused):
            await oauth.discover(url, client, NetworkPolicy())


async def test_a_callback_from_another_issuer_is_refused(
        protected: tuple[str, AuthServerState]) -> None:
    url, _ = protected
    async with guarded_client(LOOPBACK) as client:
        server = await oauth.discover(url, client, LOOPBACK)
    oauth.check_callback_issuer(server, None)  # this server does not send iss
    oauth.check_callback_issuer(server, str(server.metadata.issuer))
    with pytest.raises(OAuthFlowError, match="iss mismatch"):
        oauth.check_callback_issuer(server, "https://evil.example")


async def test_discovery_refuses_metadata_that_points_an_endpoint_elsewhere() -> None:
    """A server whose own address is allowed publishes authorization server metadata whose
    token endpoint is an internal address: discovery refuses it before any token request."""
    base = "http://127.0.0.1:{port}"

    async def prm(request: Request) -> JSONResponse:
        origin = base.format(port=request.url.port)
        return JSONResponse({"resource": f"{origin}/mcp", "authorization_servers": [origin]})

    async def asm(request: Request) -> JSONResponse:
        origin = base.format(port=request.url.port)
        return JSONResponse({"issuer": origin, "authorization_endpoint": f"{origin}/authorize",
                             "token_endpoint": "http://10.0.0.7/token",
                             "response_types_supported": ["code"]})

    async def challenge(request: Request) -> Response:
        return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})

    app = Starlette(routes=[Route("/mcp", challenge),
                            Route("/.well-known/oauth-protected-resource/mcp", prm),
                            Route("/.well-known/oauth-authorization-server", asm)])
    only_loopback = NetworkPolicy.build(allowed_networks=["127.0.0.1/32"])
    async with serve_app(app) as origin, guarded_client(only_loopback) as client:
        with pytest.raises(UrlRefused, match="10.0.0.7"):
            await oauth.discover(f"{origin}/mcp", client, only_loopback)


def _server(**metadata: object) -> AuthorizationServer:
    return AuthorizationServer(resource="https://mcp.example/mcp", scope=None,
                               metadata=oauth.OAuthMetadata.model_validate({
                                   "issuer": "https://auth.example",
                                   "authorization_endpoint": "https://auth.example/authorize",
                                   "token_endpoint": "https://auth.example/token",
                                   **metadata}))


@pytest.mark.parametrize(("supported", "method"), [
    (None, "client_secret_basic"),  # RFC 8414: absent means basic
    (["client_secret_basic"], "client_secret_basic"),
    (["client_secret_basic", "client_secret_post"], "client_secret_post"),
    (["none"], "client_secret_basic"),  # a secret is never sent as "none"
])
def test_a_configured_client_with_a_secret_uses_a_method_the_server_takes(
        supported: list[str] | None, method: str) -> None:
    server = _server(**({"token_endpoint_auth_methods_supported": supported}
                        if supported else {}))
    info = oauth.configured_client(server, "id-1", "s3cret", REDIRECT)
    assert (info.client_id, info.token_endpoint_auth_method) == ("id-1", method)
    public = oauth.configured_client(server, "id-2", None, REDIRECT)
    assert public.token_endpoint_auth_method == "none" and public.client_secret is None


async def test_a_client_id_metadata_document_replaces_registration_where_supported() -> None:
    server = _server(client_id_metadata_document_supported=True)
    async with guarded_client(LOOPBACK) as client:  # no request is made
        info = await oauth.register(server, REDIRECT, "confab", client,
                                    metadata_url="https://confab.example/oauth/client.json")
    assert info.client_id == "https://confab.example/oauth/client.json"
    assert info.token_endpoint_auth_method == "none"
    with pytest.raises(oauth.OAuthRegistrationError):  # no document offered: registration
        async with guarded_client(LOOPBACK) as client:
            await oauth.register(_server(), REDIRECT, "confab", client,
                                 metadata_url="https://confab.example/oauth/client.json")
