"""The MCP conformance suite's client command: ``python -m apps.engine.mcp.conformance URL``.

The suite (``@modelcontextprotocol/conformance``, run by ``make conformance``) starts a test
server per scenario, runs this command with the server's URL appended and the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` (and, where it needs one, a JSON ``MCP_CONFORMANCE_CONTEXT``), then
checks what the client did against the specification. This command drives confab's own stack —
:class:`~apps.engine.mcp.McpManager` over Streamable HTTP, the OAuth steps of
:mod:`apps.engine.mcp.oauth` behind :class:`~apps.engine.mcp.bearer.BearerAuth` — connecting,
listing the server's tools and calling them. Only what a person does is stood in for, here and
nowhere else: the browser's visit to the authorization endpoint (its redirect carries the code
back) and the person answering an elicitation (:class:`~apps.engine.mcp.elicitation.
AcceptDefaults`: accept with the schema's defaults).

The SSRF guard stays on: the scenarios run on loopback, which ``CONFAB_ALLOW_PRIVATE_NETWORK=1``
allows exactly as it does for the server (``make conformance`` sets it).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth.utils import extract_scope_from_www_auth
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from apps.engine.mcp import oauth
from apps.engine.mcp.bearer import BearerAuth
from apps.engine.mcp.config import McpServerSpec
from apps.engine.mcp.elicitation import AcceptDefaults
from apps.engine.mcp.manager import McpManager
from apps.engine.tools.net import NetworkPolicy, guarded_client

__all__ = ["SignIn", "example_arguments", "main", "run"]

REDIRECT_URI = "http://localhost:3000/callback"  # the suite's servers accept any; never listened on
CLIENT_NAME = "confab conformance client"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client id metadata document URL the suite's servers expect (auth/basic-cimd): they take
it as is and never fetch it. confab itself publishes no such document yet."""
MAX_AUTHORIZATIONS = 3
"""Authorizations one run may make: the first and two step-ups (auth/scope-retry-limit)."""


class SignIn:
    """A :class:`~apps.engine.mcp.bearer.TokenSource` that signs in to the MCP server at
    ``url`` the first time a token is needed and again when the server asks for more scope (at
    most :data:`MAX_AUTHORIZATIONS` times). ``context``: the scenario's context (a
    pre-registered ``client_id``/``client_secret``)."""

    def __init__(self, url: str, policy: NetworkPolicy, context: dict[str, Any]) -> None:
        self.url = url
        self.policy = policy
        self.context = context
        self.authorizations = 0
        self._server: oauth.AuthorizationServer | None = None
        self._client: OAuthClientInformationFull | None = None
        self._token: OAuthToken | None = None

    async def token(self) -> str | None:
        """None until the server asks for a sign-in (its 401 names where to sign in)."""
        return self._token.access_token if self._token else None

    async def renew(self, refusal: httpx2.Response) -> str | None:
        if self.authorizations >= MAX_AUTHORIZATIONS:
            return None
        self._token = await self._authorize(refusal)
        return self._token.access_token

    async def _authorize(self, refusal: httpx2.Response) -> OAuthToken:
        self.authorizations += 1
        async with guarded_client(self.policy) as client:
            if self._server is None:
                self._server = await oauth.discover(self.url, client, self.policy,
                                                    challenge=refusal)
            scope = extract_scope_from_www_auth(refusal)  # a step-up names the scope it needs
            server = replace(self._server, scope=scope) if scope else self._server
            if self._client is None:
                self._client = await self._client_for(server, client)
            authorize, state, verifier = oauth.authorization_request(server, self._client,
                                                                     REDIRECT_URI)
            code = await _visit(authorize, state, server, client)
            return await oauth.exchange_code(server, self._client, code=code,
                                             code_verifier=verifier, redirect_uri=REDIRECT_URI,
                                             client=client)

    async def _client_for(self, server: oauth.AuthorizationServer,
                          client: httpx2.AsyncClient) -> OAuthClientInformationFull:
        if "client_id" in self.context:  # pre-registered (auth/pre-registration)
            return oauth.configured_client(server, self.context["client_id"],
                                           self.context.get("client_secret"), REDIRECT_URI)
        return await oauth.register(server, REDIRECT_URI, CLIENT_NAME, client,
                                    metadata_url=CIMD_URL)


async def _visit(authorize: str, state: str, server: oauth.AuthorizationServer,
                 client: httpx2.AsyncClient) -> str:
    """The browser's part: open the authorization URL (the suite's servers approve at once) and
    take the code from the redirect back; the state and issuer are checked as confab's
    callback checks them."""
    answer = await client.get(authorize)
    location = answer.headers.get("location")
    if answer.status_code not in (301, 302, 303, 307) or not location:
        raise oauth.OAuthFlowError(f"The authorization endpoint answered {answer.status_code} "
                                   "without a redirect.")
    back = parse_qs(urlsplit(location).query)
    if back.get("state") != [state]:
        raise oauth.OAuthFlowError("The redirect back carries another state.")
    if "code" not in back:
        raise oauth.OAuthFlowError(f"The authorization was refused: {back.get('error')}")
    oauth.check_callback_issuer(server, (back.get("iss") or [None])[0])
    return back["code"][0]


async def run(url: str, scenario: str, context: dict[str, Any], *,
              allow_private_network: bool) -> None:
    """Connect to ``url`` as ``scenario`` asks, list the tools and call each with no
    arguments. Raises what the stack raises when something fails (the suite reads the exit
    code and the server's own record)."""
    policy = NetworkPolicy.build(allow_private_network=allow_private_network)
    auth = (BearerAuth(SignIn(url, policy, context)) if scenario.startswith("auth/")
            else None)
    spec = McpServerSpec(name="conformance", transport="streamable_http", url=url, auth=auth)
    async with McpManager([spec], allow_private_network=allow_private_network,
                          client_name=CLIENT_NAME, elicitation=AcceptDefaults()) as manager:
        [status] = manager.status()
        if status.state != "connected":
            raise RuntimeError(f"could not connect: {status.detail}")
        for tool in manager.tools():
            await tool.server.call_tool(tool.mcp_name, example_arguments(tool.spec.parameters))


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments a tool's input ``schema`` accepts: each required property's ``default``, else
    a plain value of its type (what a model would send to try the tool)."""
    plain = {"number": 1, "integer": 1, "string": "confab", "boolean": True, "array": [],
             "object": {}}
    properties = schema.get("properties") or {}
    return {name: properties.get(name, {}).get("default",
                                               plain.get(properties.get(name, {}).get("type"), ""))
            for name in schema.get("required") or []}


def main(argv: list[str]) -> int:
    """The command line: ``URL`` (the suite appends it). Exit 2 for a wrong command line or a
    context that is not a JSON object, 1 when the scenario failed; the reason on stderr."""
    if len(argv) != 1:
        print("usage: python -m apps.engine.mcp.conformance URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError as exc:
        print(f"MCP_CONFORMANCE_CONTEXT is not JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(context, dict):
        print("MCP_CONFORMANCE_CONTEXT must be a JSON object", file=sys.stderr)
        return 2
    allow = os.environ.get("CONFAB_ALLOW_PRIVATE_NETWORK", "").lower() in ("1", "true", "yes")
    try:
        asyncio.run(run(argv[0], scenario, context, allow_private_network=allow))
    except Exception as exc:  # the reason for the suite's log; the exit code says it failed
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
