"""OAuth 2.1 sign-in to an MCP server, as steps a web host runs in separate requests.

Source: the MCP authorization spec (modelcontextprotocol.io/specification/2025-11-25/basic/
authorization): protected-resource metadata (RFC 9728) names the authorization server, whose
metadata (RFC 8414) gives the endpoints; dynamic client registration (RFC 7591) where offered;
authorization code with PKCE S256 (OAuth 2.1, RFC 7636); the ``resource`` indicator (RFC 8707)
on the authorization, token and refresh requests; revocation (RFC 7009).

The SDK's ``OAuthClientProvider`` runs the whole flow inside one httpx auth generator and awaits
the browser's callback in the same coroutine. A web host gets that callback as another request,
perhaps in another process, so this module drives the SDK's own pieces instead (its discovery
URL builders and response parsers, issuer checks, registration request and checks, PKCE, token
client authentication) and keeps every piece of state in values the host can store:
:class:`AuthorizationServer` (JSON), ``OAuthClientInformationFull`` and ``OAuthToken``.

**SSRF.** Every request goes through the caller's ``client``, which must be a
:func:`~apps.engine.tools.net.guarded_client`; on top of that :func:`discover` checks each
endpoint the metadata names (authorization, token, registration, revocation) with
:func:`~apps.engine.tools.net.check_url` and refuses the server when one fails, so a metadata
document cannot point confab (or the person's browser) at an internal address.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
from mcp.client.auth import (
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
    PKCEParameters,
)
from mcp.client.auth.oauth2 import OAuthContext, check_registration_usable
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_client_registration_request,
    create_oauth_metadata_request,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_registration_response,
    handle_token_response_scopes,
    validate_authorization_response_iss,
    validate_metadata_issuer,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

from apps.engine.tools.net import NetworkPolicy, Resolver, check_url

__all__ = [
    "GRANT_TYPES",
    "AuthorizationServer",
    "OAuthFlowError",
    "OAuthRegistrationError",
    "OAuthTokenError",
    "authorization_request",
    "check_callback_issuer",
    "check_endpoints",
    "configured_client",
    "discover",
    "exchange_code",
    "refresh",
    "register",
    "revoke",
]

GRANT_TYPES = ["authorization_code", "refresh_token"]
_FORM = {"Content-Type": "application/x-www-form-urlencoded"}
_AUTH_METHODS = ("client_secret_post", "client_secret_basic", "none")


@dataclass(frozen=True, slots=True)
class AuthorizationServer:
    """What discovery found for one MCP server: ``resource`` (the RFC 8707 indicator sent with
    every authorization, token and refresh request), the authorization server's ``metadata``,
    and the ``scope`` to ask for (space-separated, None: none named)."""

    resource: str
    metadata: OAuthMetadata
    scope: str | None

    def to_json(self) -> dict[str, Any]:
        """A JSON object :meth:`from_json` reads back (no secrets in it)."""
        return {"resource": self.resource, "scope": self.scope,
                "metadata": self.metadata.model_dump(mode="json", exclude_none=True)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuthorizationServer:
        """The value :meth:`to_json` wrote; pydantic's ValidationError for anything else."""
        return cls(resource=str(data["resource"]), scope=data.get("scope"),
                   metadata=OAuthMetadata.model_validate(data["metadata"]))


async def discover(server_url: str, client: httpx2.AsyncClient, policy: NetworkPolicy,
                   resolver: Resolver | None = None, *,
                   challenge: httpx2.Response | None = None) -> AuthorizationServer:
    """Find the authorization server of the MCP server at ``server_url``.

    The server's ``WWW-Authenticate`` challenge (its ``resource_metadata`` and ``scope``) comes
    from ``challenge``, the 401 the server answered a request with, else from an
    unauthenticated GET of the endpoint; then the protected-resource metadata (RFC 9728, the
    SDK's URL order: the challenge's URL, the path-based, the root well-known URL) and the
    authorization server metadata (RFC 8414 / OIDC discovery, issuer checked). Raises
    OAuthFlowError when the server names no usable authorization server or a resource that is
    not this server's, UrlRefused (a ToolError) for an endpoint the SSRF guard refuses, httpx2
    errors when a server cannot be reached.
    """
    if challenge is None:
        async with client.stream("GET", server_url) as challenge:
            pass  # the status and headers are the challenge; an SSE endpoint's stream is unread
    prm = await _resource_metadata(server_url, challenge, client)
    issuer = str(prm.authorization_servers[0]) if prm else None
    metadata = await _server_metadata(issuer, server_url, client)
    await check_endpoints(metadata, policy, resolver)
    www_scope = (extract_scope_from_www_auth(challenge)
                 if challenge.status_code in (401, 403) else None)
    scope = get_client_metadata_scopes(www_scope, prm, metadata, GRANT_TYPES)
    resource = resource_url_from_server_url(server_url)
    if prm is not None and check_resource_allowed(resource, str(prm.resource)):
        resource = str(prm.resource)  # the SDK's rule: a parent resource the server names
    return AuthorizationServer(resource=resource, metadata=metadata, scope=scope)


async def check_endpoints(metadata: OAuthMetadata, policy: NetworkPolicy,
                          resolver: Resolver | None = None) -> None:
    """Raise UrlRefused when the SSRF guard refuses one of the endpoints ``metadata`` names
    (authorization, token, registration, revocation)."""
    for endpoint in (metadata.authorization_endpoint, metadata.token_endpoint,
                     metadata.registration_endpoint, metadata.revocation_endpoint):
        if endpoint is not None:
            await check_url(str(endpoint), policy, resolver)


async def _resource_metadata(server_url: str, challenge: httpx2.Response,
                             client: httpx2.AsyncClient) -> ProtectedResourceMetadata | None:
    hinted = (extract_resource_metadata_from_www_auth(challenge)
              if challenge.status_code in (401, 403) else None)
    for url in build_protected_resource_metadata_discovery_urls(hinted, server_url):
        prm = await handle_protected_resource_response(
            await client.send(create_oauth_metadata_request(url)))
        if prm is None:
            continue
        expected = resource_url_from_server_url(server_url)
        if not check_resource_allowed(requested_resource=expected,
                                      configured_resource=str(prm.resource)):
            raise OAuthFlowError(f"The server's metadata names the resource {prm.resource}, "
                                 f"not {expected}.")
        return prm
    return None  # the 2025-03-26 servers: the authorization server is the server's origin


async def _server_metadata(issuer: str | None, server_url: str,
                           client: httpx2.AsyncClient) -> OAuthMetadata:
    for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url):
        ok, metadata = await handle_auth_metadata_response(
            await client.send(create_oauth_metadata_request(url)))
        if not ok:
            break
        if metadata is not None:
            if issuer is not None:
                validate_metadata_issuer(metadata, issuer)
            return metadata
    raise OAuthFlowError("The server names no authorization server confab can find "
                         "(no OAuth or OpenID metadata answered).")


async def register(server: AuthorizationServer, redirect_uri: str, client_name: str,
                   client: httpx2.AsyncClient, *, metadata_url: str | None = None
                   ) -> OAuthClientInformationFull:
    """The client confab is at ``server``, with ``redirect_uri`` as its only redirect URI.

    Where the server accepts client ID metadata documents (``client_id_metadata_document_
    supported``, MCP authorization 2025-11-25, draft-ietf-oauth-client-id-metadata-document)
    and ``metadata_url`` (where confab publishes its document) is given, that URL is the
    client id and nothing is registered; otherwise confab registers (RFC 7591), asking for the
    first token endpoint authentication method the server supports of ``client_secret_post``,
    ``client_secret_basic`` and ``none``. Raises OAuthRegistrationError when the server offers
    no registration, refuses it or registers a client this flow cannot use (the SDK's
    ``check_registration_usable``)."""
    if metadata_url and server.metadata.client_id_metadata_document_supported:
        return OAuthClientInformationFull(client_id=metadata_url, redirect_uris=[redirect_uri],
                                          grant_types=GRANT_TYPES, client_name=client_name,
                                          token_endpoint_auth_method="none",
                                          issuer=str(server.metadata.issuer))
    if server.metadata.registration_endpoint is None:
        raise OAuthRegistrationError("The authorization server offers no client registration: "
                                     "a client id (and secret) must be configured.")
    wanted = OAuthClientMetadata(redirect_uris=[redirect_uri], grant_types=GRANT_TYPES,
                                 client_name=client_name, scope=server.scope,
                                 token_endpoint_auth_method=_auth_method(server.metadata),
                                 application_type="web")
    request = create_client_registration_request(server.metadata, wanted, "")
    info = await handle_registration_response(await client.send(request))
    check_registration_usable(info)
    info.issuer = str(server.metadata.issuer)
    return info


def configured_client(server: AuthorizationServer, client_id: str, client_secret: str | None,
                      redirect_uri: str) -> OAuthClientInformationFull:
    """A client registered out of band (an admin's client id and secret): with a secret it
    authenticates by the first of ``client_secret_post`` and ``client_secret_basic`` the
    server supports, without one as a public client (``none``)."""
    method = _auth_method(server.metadata) if client_secret else "none"
    if client_secret and method == "none":
        method = "client_secret_basic"  # RFC 8414's default for a client that has a secret
    return OAuthClientInformationFull(client_id=client_id, client_secret=client_secret or None,
                                      token_endpoint_auth_method=method,
                                      redirect_uris=[redirect_uri])


def _auth_method(metadata: OAuthMetadata) -> str:
    """The method to register with: ``client_secret_post`` where the server takes it (the
    SDK's servers refuse basic at their revocation endpoint), else basic, else none; RFC 8414:
    an absent ``token_endpoint_auth_methods_supported`` means basic."""
    supported = metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    return next((m for m in _AUTH_METHODS if m in supported), "client_secret_basic")


def authorization_request(server: AuthorizationServer, client_info: OAuthClientInformationFull,
                          redirect_uri: str) -> tuple[str, str, str]:
    """``(url, state, code_verifier)``: the authorization endpoint URL to send the browser to
    (code flow, PKCE S256, the resource indicator, the scope), the ``state`` the callback must
    bring back and the PKCE verifier the token request needs (keep both secret)."""
    pkce = PKCEParameters.generate()
    state = secrets.token_urlsafe(32)
    params = {"response_type": "code", "client_id": client_info.client_id,
              "redirect_uri": redirect_uri, "state": state,
              "code_challenge": pkce.code_challenge, "code_challenge_method": "S256",
              "resource": server.resource}
    if server.scope:
        params["scope"] = server.scope
    endpoint = str(server.metadata.authorization_endpoint)
    url = f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"  # RFC 6749 3.1
    return url, state, pkce.code_verifier


def check_callback_issuer(server: AuthorizationServer, iss: str | None) -> None:
    """RFC 9207: the callback's ``iss`` must name the server the request went to (and must be
    there when the server says it sends it). Raises OAuthFlowError otherwise."""
    validate_authorization_response_iss(iss, server.metadata)


async def exchange_code(server: AuthorizationServer, client_info: OAuthClientInformationFull, *,
                        code: str, code_verifier: str, redirect_uri: str,
                        client: httpx2.AsyncClient) -> OAuthToken:
    """The tokens for an authorization ``code`` (RFC 6749 4.1.3 with PKCE and the resource).
    Raises OAuthTokenError when the server refuses or answers something that is not tokens."""
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "client_id": client_info.client_id, "code_verifier": code_verifier,
            "resource": server.resource}
    token = await _token_request(server, client_info, data, client)
    if token.scope is None:
        token.scope = server.scope  # RFC 6749 5.1: omitted means what was asked
    return token


async def refresh(server: AuthorizationServer, client_info: OAuthClientInformationFull,
                  previous: OAuthToken, client: httpx2.AsyncClient) -> OAuthToken:
    """New tokens for ``previous``'s refresh token (RFC 6749 6). A server that does not rotate
    the refresh token or omits the scope keeps the previous ones (as the SDK does). Raises
    OAuthTokenError when there is no refresh token or the server refuses."""
    if not previous.refresh_token:
        raise OAuthTokenError("The sign-in has no refresh token: sign in again.")
    data = {"grant_type": "refresh_token", "refresh_token": previous.refresh_token,
            "client_id": client_info.client_id, "resource": server.resource}
    token = await _token_request(server, client_info, data, client)
    token.refresh_token = token.refresh_token or previous.refresh_token
    token.scope = token.scope or previous.scope
    return token


async def revoke(server: AuthorizationServer, client_info: OAuthClientInformationFull,
                 token: OAuthToken, client: httpx2.AsyncClient) -> bool:
    """Revoke ``token`` at the server (RFC 7009: the refresh token, which ends the grant, else
    the access token). False when the server has no revocation endpoint; OAuthTokenError when
    it answers an error (RFC 7009 2.2: 200 for success, also for a token already invalid)."""
    if server.metadata.revocation_endpoint is None:
        return False
    hint = "refresh_token" if token.refresh_token else "access_token"
    data = {"token": token.refresh_token or token.access_token, "token_type_hint": hint,
            "client_id": client_info.client_id}
    data, headers = _client_auth(client_info, data)
    response = await client.post(str(server.metadata.revocation_endpoint), data=data,
                                 headers=headers)
    if response.status_code != 200:
        raise OAuthTokenError(f"Revocation failed ({response.status_code}).")
    return True


async def _token_request(server: AuthorizationServer, client_info: OAuthClientInformationFull,
                         data: dict[str, str], client: httpx2.AsyncClient) -> OAuthToken:
    data, headers = _client_auth(client_info, data)
    response = await client.post(str(server.metadata.token_endpoint), data=data, headers=headers)
    if response.status_code not in (200, 201):
        await response.aread()
        raise OAuthTokenError(f"The token request was refused ({response.status_code}): "
                              f"{_error_code(response)}")
    return await handle_token_response_scopes(response)


def _client_auth(client_info: OAuthClientInformationFull, data: dict[str, str]
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """The SDK's client authentication of a token request (client_secret_basic/_post/none)."""
    context = OAuthContext(server_url="", client_metadata=_NO_METADATA, storage=None,  # type: ignore[arg-type]
                           redirect_handler=None, callback_handler=None,
                           client_info=client_info)
    return context.prepare_token_auth(dict(data), dict(_FORM))


_NO_METADATA = OAuthClientMetadata(redirect_uris=["http://localhost/"])  # unused by client auth


def _error_code(response: httpx2.Response) -> str:
    """The RFC 6749 5.2 ``error`` of a refusal (never the body: it may echo a secret)."""
    try:
        body = response.json()
    except ValueError:
        return "no OAuth error code"
    error = body.get("error") if isinstance(body, dict) else None
    return str(error) if isinstance(error, str) else "no OAuth error code"
