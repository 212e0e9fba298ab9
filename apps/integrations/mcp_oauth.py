"""OAuth sign-in to MCP servers that need one (DESIGN 2.7, 4): the flow split across requests,
the stored tokens, and the token a run uses. No browser is needed to drive it (issue 27's
conformance client calls these functions); the views only pass requests in.

1. :func:`sign_in_start` discovers the server's authorization server (the engine's
   :mod:`apps.engine.mcp.oauth`, every endpoint through the SSRF guard), registers confab as a
   client where no client id is configured, and stores an :class:`McpOAuthFlow` bound to the
   person and their session; it returns the authorization URL to send the browser to.
2. :func:`sign_in_finish` takes the callback's query: the flow is found by its ``state`` and
   deleted (one use), refused unless it is the same person, the same session, not older than
   :data:`FLOW_TTL`, the same redirect URI and the right issuer (RFC 9207); the code is
   exchanged and the tokens stored encrypted in :class:`McpOAuthConnection` (replacing an
   earlier sign-in of the same scope).
3. :func:`run_access_token` gives a run the access token: the team's for a team-scoped server,
   the run starter's own for a person-scoped one (never another member's), refreshed when it
   expires within :data:`REFRESH_MARGIN`. :class:`NotSignedIn` when there is none.
4. :func:`sign_out` revokes the grant at the server (RFC 7009, where it offers revocation) and
   deletes the stored tokens; :func:`forget_sign_ins` does the same, best effort, for sign-ins
   that end because their server was deleted or its URL no longer matches them.

Who may: a team-scoped server is signed in and out by the team's owners and admins; a
person-scoped one by each member who may start runs (not viewers), for themselves. Another
team's server, or a catalog entry the team has not enabled, is ``not_found``. Time comes from
the ``now`` argument (default: ``timezone.now()``), so tests move the clock.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import httpx2
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from pydantic import ValidationError

from apps.accounts.models import Team, User
from apps.accounts.permissions import require_manager, require_member
from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.engine.mcp import oauth
from apps.engine.mcp.oauth import AuthorizationServer, OAuthFlowError
from apps.engine.tools.net import NetworkPolicy, UrlRefused, guarded_client
from apps.integrations.crypto import DecryptionError
from apps.integrations.mcp_selectors import team_mcp_servers
from apps.integrations.models import (
    UNREADABLE_SECRETS,
    McpOAuthConnection,
    McpOAuthFlow,
    McpServerConfig,
    McpSignIn,
)

__all__ = [
    "FLOW_TTL",
    "REFRESH_MARGIN",
    "NotSignedIn",
    "SignOut",
    "connection_for",
    "drop_stale_sign_ins",
    "forget_sign_ins",
    "mark_sign_ins",
    "normalized_url",
    "personal_sign_ins",
    "run_access_token",
    "sign_in_path",
    "sign_in_server",
    "sign_in_start",
    "sign_in_finish",
    "sign_out",
]

FLOW_TTL = timedelta(minutes=10)  # from the redirect to the callback
REFRESH_MARGIN = timedelta(seconds=60)  # refresh a token that expires sooner than this
CLIENT_NAME = "confab"

logger = logging.getLogger(__name__)


class NotSignedIn(Exception):
    """Nobody signed in for this run: the team (``for_team``) or the person who started it."""

    def __init__(self, server: McpServerConfig, *, for_team: bool) -> None:
        super().__init__(f"no sign-in to MCP server {server.name}")
        self.server = server
        self.for_team = for_team


def sign_in_path(team: Team, server: McpServerConfig) -> str:
    """The page where a person signs in to ``server`` for ``team`` (the run's notice links it)."""
    return reverse("integrations:mcp_sign_in", args=[team.pk, server.pk])


def sign_in_server(team: Team, server_id: int, by: User) -> McpServerConfig:
    """``team``'s server ``server_id`` that needs a sign-in, if ``by`` may sign in to it:
    ``not_found`` for a non-member, another team's server, a catalog entry the team has not
    enabled or a server without sign-in; ``forbidden`` for a viewer, and for a member who is
    not an owner or admin when the sign-in is the team's."""
    membership = require_member(by, team)
    server = next((s for s in team_mcp_servers(team) if s.pk == server_id), None)
    if server is None or not server.needs_sign_in:
        raise not_found("MCP server")
    if server.sign_in == McpSignIn.TEAM:
        require_manager(by, team)
    elif not membership.role_enum.can_write:
        raise ApplicationError(ErrorCode.FORBIDDEN, gettext("Viewers do not use the team's tools."))
    return server


def connection_for(server: McpServerConfig, team: Team, user: User | None
                   ) -> McpOAuthConnection | None:
    """The sign-in a run of ``team`` started by ``user`` uses for ``server`` (the team's, or
    for a person-scoped server ``user``'s own), or None."""
    rows = McpOAuthConnection.objects.filter(server=server, team=team)
    if server.sign_in == McpSignIn.TEAM:
        return rows.filter(user=None).first()
    if user is None:
        return None
    return rows.filter(user=user).first()


def personal_sign_ins(team: Team, user: User) -> list[McpServerConfig]:
    """The person-scoped servers a run of ``team`` connects, each with ``sign_in_state``:
    ``user``'s own sign-in or None (the members' sign-ins page). Empty for a viewer, who starts
    no runs; ``not_found`` for a non-member."""
    if not require_member(user, team).role_enum.can_write:
        return []
    return mark_sign_ins([s for s in team_mcp_servers(team) if s.sign_in == McpSignIn.PERSON],
                         team, user)


def mark_sign_ins(servers: list[McpServerConfig], team: Team, user: User
                  ) -> list[McpServerConfig]:
    """``servers``, each that needs a sign-in given ``sign_in_state``: the sign-in ``user``
    sees for ``team`` (:func:`connection_for`: the team's, or their own), or None."""
    for server in servers:
        if server.needs_sign_in:
            server.sign_in_state = connection_for(server, team, user)  # type: ignore[attr-defined]
    return servers


# -- the flow ----------------------------------------------------------------------------------
def sign_in_start(*, team: Team, server_id: int, by: User, session_key: str,
                  redirect_uri: str) -> str:
    """Begin ``by``'s sign-in to the server (see the module doc); the URL of the authorization
    endpoint to redirect the browser to. ``invalid`` when the server cannot be signed in to
    (discovery, the SSRF guard or registration refused: the reason says which)."""
    server = sign_in_server(team, server_id, by)
    try:
        found, client_info = async_to_sync(_discover_and_register)(server, redirect_uri)
    except (OAuthFlowError, UrlRefused, ValidationError) as exc:
        raise _refused("The sign-in cannot start", exc) from None
    except httpx2.HTTPError as exc:
        raise _refused("The server cannot be reached", exc) from None
    except DecryptionError:
        raise ApplicationError(ErrorCode.INVALID, str(UNREADABLE_SECRETS)) from None
    url, state, verifier = oauth.authorization_request(found, client_info, redirect_uri)
    # Flows nobody came back to are of no use: each start clears the expired ones.
    McpOAuthFlow.objects.filter(created_at__lt=timezone.now() - FLOW_TTL).delete()
    McpOAuthFlow.objects.create(
        state_hash=_digest(state), session_hash=_digest(session_key), server=server, team=team,
        user=by, for_team=server.sign_in == McpSignIn.TEAM,
        authorization_server=found.to_json(), client_info=client_info.model_dump_json(),
        code_verifier=verifier, redirect_uri=redirect_uri)
    return url


async def _discover_and_register(server: McpServerConfig, redirect_uri: str
                                 ) -> tuple[AuthorizationServer, OAuthClientInformationFull]:
    policy = _policy()
    async with guarded_client(policy) as client:
        found = await oauth.discover(server.url, client, policy)
        if server.oauth_client_id:
            return found, oauth.configured_client(found, server.oauth_client_id,
                                                  server.oauth_client_secret, redirect_uri)
        return found, await oauth.register(found, redirect_uri, CLIENT_NAME, client)


def sign_in_finish(*, user: User, session_key: str, redirect_uri: str,
                   params: Mapping[str, str], now: datetime | None = None
                   ) -> McpOAuthConnection:
    """Finish a sign-in from the callback's query ``params`` (``state``, ``code``, ``iss``,
    or ``error``). ``invalid`` for an unknown, used, expired or foreign state (another person
    or session), another redirect URI, an error answer, a wrong issuer or a refused code;
    nothing stored changes then, but the flow is used up."""
    now = now or timezone.now()
    flow = _take_flow(params.get("state", ""))
    if (flow is None or flow.user_id != user.pk or flow.session_hash != _digest(session_key)
            or flow.created_at + FLOW_TTL < now):
        raise ApplicationError(ErrorCode.INVALID, gettext(
            "This sign-in link is not valid (it was used, it expired, or it was started "
            "elsewhere). Start again."))
    if flow.redirect_uri != redirect_uri:
        raise ApplicationError(ErrorCode.INVALID, gettext(
            "The sign-in came back to another address."))
    if params.get("error"):
        raise ApplicationError(
            ErrorCode.INVALID, gettext("The server did not sign you in (%(error)s).")
                               % {"error": str(params["error"])[:60]})
    found = AuthorizationServer.from_json(flow.authorization_server)
    client_info = OAuthClientInformationFull.model_validate_json(flow.client_info)
    try:
        oauth.check_callback_issuer(found, params.get("iss"))
        token = async_to_sync(_exchange)(found, client_info, params.get("code", ""),
                                         flow.code_verifier, redirect_uri)
    except (OAuthFlowError, UrlRefused) as exc:
        raise _refused("The sign-in failed", exc) from None
    except httpx2.HTTPError as exc:
        raise _refused("The server cannot be reached", exc) from None
    return _store(flow, found, client_info, token, now)


def _take_flow(state: str) -> McpOAuthFlow | None:
    """The flow of ``state``, deleted in the same transaction (a state works once)."""
    if not state:
        return None
    with transaction.atomic():
        flow = (McpOAuthFlow.objects.select_for_update().select_related("server", "team")
                .filter(state_hash=_digest(state)).first())
        if flow is not None:
            McpOAuthFlow.objects.filter(pk=flow.pk).delete()
    return flow


async def _exchange(found: AuthorizationServer, client_info: OAuthClientInformationFull,
                    code: str, verifier: str, redirect_uri: str) -> OAuthToken:
    async with guarded_client(_policy()) as client:
        return await oauth.exchange_code(found, client_info, code=code, code_verifier=verifier,
                                         redirect_uri=redirect_uri, client=client)


def _store(flow: McpOAuthFlow, found: AuthorizationServer,
           client_info: OAuthClientInformationFull, token: OAuthToken, now: datetime
           ) -> McpOAuthConnection:
    owner = None if flow.for_team else flow.user
    values: dict[str, Any] = {
        "authorized_by": flow.user, "authorization_server": found.to_json(),
        "client_info": client_info.model_dump_json(), **_token_fields(token, now)}
    connection, _ = McpOAuthConnection.objects.update_or_create(
        server=flow.server, team=flow.team, user=owner, defaults=values)
    return connection


def _token_fields(token: OAuthToken, now: datetime) -> dict[str, Any]:
    expires = now + timedelta(seconds=token.expires_in) if token.expires_in else None
    return {"access_token": token.access_token, "refresh_token": token.refresh_token or "",
            "scope": token.scope or "", "expires_at": expires}


# -- using and ending a sign-in ----------------------------------------------------------------
def run_access_token(server: McpServerConfig, team: Team, user: User | None, *,
                     now: datetime | None = None) -> str:
    """The access token a run of ``team`` started by ``user`` sends to ``server``, refreshed
    (and stored) first when it expires within :data:`REFRESH_MARGIN`. Raises NotSignedIn when
    there is no sign-in to use (also when the refresh is refused: the grant is gone, and the
    stored tokens with it), httpx2.HTTPError when the authorization server cannot be reached
    for the refresh (the sign-in is kept), DecryptionError for tokens no key opens."""
    now = now or timezone.now()
    connection = connection_for(server, team, user)
    if connection is not None and not _same_resource(connection, server):
        forget_sign_ins([connection])  # the URL changed: never send its token elsewhere
        connection = None
    if connection is None:
        raise NotSignedIn(server, for_team=server.sign_in == McpSignIn.TEAM)
    if _fresh(connection, now):
        return connection.access_token
    # One refresh at a time per sign-in: servers rotate refresh tokens, so a second concurrent
    # refresh with the old one would be refused (and end the sign-in).
    with transaction.atomic():
        connection = McpOAuthConnection.objects.select_for_update().get(pk=connection.pk)
        if _fresh(connection, now):  # another run refreshed it while this one waited
            return connection.access_token
        try:
            token = async_to_sync(_refresh)(connection)
        except OAuthFlowError:  # refused: the grant is gone, and the sign-in with it
            connection.delete()
            token = None
        else:
            for name, value in _token_fields(token, now).items():
                setattr(connection, name, value)
            connection.save()
    if token is None:
        raise NotSignedIn(server, for_team=server.sign_in == McpSignIn.TEAM)
    return connection.access_token


def _fresh(connection: McpOAuthConnection, now: datetime) -> bool:
    return connection.expires_at is None or connection.expires_at - REFRESH_MARGIN > now


def _same_resource(connection: McpOAuthConnection, server: McpServerConfig) -> bool:
    """Whether the tokens were issued for the server's current URL (RFC 8707 resource), the
    URL compared as normalized (:func:`normalized_url`): ``/mcp/../evil`` is not under
    ``/mcp``."""
    resource = str(connection.authorization_server.get("resource", ""))
    return bool(resource) and check_resource_allowed(
        requested_resource=resource_url_from_server_url(normalized_url(server.url)),
        configured_resource=resource)


def normalized_url(url: str) -> str:
    """``url`` as RFC 3986 section 6.2.2 normalizes it: percent-encoded unreserved characters
    decoded (``%2e`` is ``.``; servers decode it too), then dot segments removed (section
    5.2.4, httpx2's parser, which is what sends the requests) and scheme and host lowercased.
    A URL httpx2 cannot parse comes back unchanged (it then matches no stored resource)."""
    decoded = _UNRESERVED_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), url)
    try:
        return str(httpx2.URL(decoded))
    except httpx2.InvalidURL:
        return url


# RFC 3986 2.3: ALPHA / DIGIT / "-" / "." / "_" / "~" (percent-encoded, any case)
_UNRESERVED_ESCAPE = re.compile(
    r"%(4[1-9A-Fa-f]|5[0-9Aa]|6[1-9A-Fa-f]|7[0-9Aa]|3[0-9]|2[Dd]|2[Ee]|5[Ff]|7[Ee])")


def drop_stale_sign_ins(server: McpServerConfig) -> None:
    """Forget (and revoke) the sign-ins of ``server`` whose resource no longer covers its URL,
    e.g. after an owner changed the URL; see :func:`forget_sign_ins`."""
    stale = [c for c in McpOAuthConnection.objects.filter(server=server)
             if not _same_resource(c, server)]
    forget_sign_ins(stale)


async def _refresh(connection: McpOAuthConnection) -> OAuthToken:
    found = AuthorizationServer.from_json(connection.authorization_server)
    client_info = OAuthClientInformationFull.model_validate_json(connection.client_info)
    async with guarded_client(_policy()) as client:
        return await oauth.refresh(found, client_info, _stored_token(connection), client)


class SignOut(enum.Enum):
    """How :func:`sign_out` ended: the server confirmed the revocation (``REVOKED``), it offers
    none or did not confirm (``FORGOTTEN``: the tokens are deleted here all the same), or there
    was no sign-in to end (``NOT_SIGNED_IN``: a second tab, a double click)."""

    REVOKED = "revoked"
    FORGOTTEN = "forgotten"
    NOT_SIGNED_IN = "not_signed_in"


def sign_out(*, team: Team, server_id: int, by: User) -> SignOut:
    """End the sign-in ``by`` may end (the team's, or their own): revoke it at the server and
    delete the stored tokens. ``not_found``/``forbidden`` as :func:`sign_in_server`."""
    server = sign_in_server(team, server_id, by)
    connection = connection_for(server, team, by)
    if connection is None:
        return SignOut.NOT_SIGNED_IN
    connection.delete()
    return SignOut.REVOKED if _revoke_quietly(connection) else SignOut.FORGOTTEN


def forget_sign_ins(connections: Iterable[McpOAuthConnection]) -> None:
    """Delete ``connections`` and then revoke each at its authorization server (RFC 7009),
    best effort: a server that is down or refuses is logged (without the token) and changes
    nothing here. Rows already deleted (the server's own delete cascaded) are fine."""
    connections = list(connections)
    McpOAuthConnection.objects.filter(pk__in=[c.pk for c in connections]).delete()
    for connection in connections:
        _revoke_quietly(connection)


def _revoke_quietly(connection: McpOAuthConnection) -> bool:
    """Whether the server confirmed revoking ``connection``; a failure is logged, not raised."""
    try:
        return async_to_sync(_revoke)(connection)
    except (OAuthFlowError, UrlRefused, httpx2.HTTPError, DecryptionError) as exc:
        # DecryptionError: tokens no configured key opens cannot be revoked; they are gone here
        logger.warning("MCP sign-in #%s (server #%s) not revoked at its server: %s",
                       connection.pk, connection.server_id, type(exc).__name__)
        return False


async def _revoke(connection: McpOAuthConnection) -> bool:
    found = AuthorizationServer.from_json(connection.authorization_server)
    client_info = OAuthClientInformationFull.model_validate_json(connection.client_info)
    async with guarded_client(_policy()) as client:
        return await oauth.revoke(found, client_info, _stored_token(connection), client)


def _stored_token(connection: McpOAuthConnection) -> OAuthToken:
    return OAuthToken(access_token=connection.access_token,
                      refresh_token=connection.refresh_token or None,
                      scope=connection.scope or None)


def _policy() -> NetworkPolicy:
    return NetworkPolicy.build(allow_private_network=settings.CONFAB["ALLOW_PRIVATE_NETWORK"])


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _refused(what: str, exc: Exception) -> ApplicationError:
    reason = exc.reason if isinstance(exc, UrlRefused) else str(exc).split("\n")[0][:200]
    return ApplicationError(ErrorCode.INVALID, f"{what}: {reason}")

