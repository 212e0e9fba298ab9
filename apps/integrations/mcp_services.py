"""Writes about a team's MCP servers, and the "test connection" check (DESIGN 2.7, 3.6, 4).

Who may do what:

- a team's owners and admins create, change and delete the team's **HTTP** servers, and enable
  or disable **catalog** entries for the team (``not_found`` for a non-member, ``forbidden``
  for other members);
- **stdio** servers run a program on this machine: only site staff define them, in the admin
  (for one team, or as catalog entries). These services refuse to create, change or delete one
  (``forbidden``), whatever the caller's form allowed;
- every lookup goes through the team: another team's server is ``not_found``, like a missing one.

HTTP URLs pass the SSRF guard of WebFetch (``apps.engine.tools.net``) when they are saved,
unless ``CONFAB["ALLOW_PRIVATE_NETWORK"]``; runs check them again on every request. Secrets
(headers) are write-only: a header given without a value (None) keeps its stored value, a
header left out is removed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import httpx2
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from apps.accounts.models import Team, User
from apps.accounts.permissions import require_manager
from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.engine.mcp import McpToolInfo, ServerStatus, probe_server
from apps.engine.tools.net import (
    IPAddress,
    NetworkPolicy,
    UrlRefused,
    check_url,
    system_resolver,
)
from apps.integrations.crypto import DecryptionError
from apps.integrations.mcp_builders import mcp_spec
from apps.integrations.mcp_oauth import (
    NotSignedIn,
    drop_stale_sign_ins,
    forget_sign_ins,
    run_access_token,
)
from apps.integrations.mcp_selectors import (
    mcp_catalog_entry,
    team_mcp_server,
    team_mcp_visible_server,
)
from apps.integrations.models import (
    HTTP_TRANSPORTS,
    McpServerConfig,
    McpTransport,
    TeamMcpEnablement,
)

__all__ = [
    "HttpServerInput",
    "McpProbeReport",
    "mcp_catalog_disable",
    "mcp_catalog_enable",
    "mcp_server_create_http",
    "mcp_server_delete",
    "mcp_server_probe",
    "mcp_server_test",
    "mcp_server_update",
    "merge_secrets",
]

PROBE_CONNECT_TIMEOUT_S = 15.0  # a page waits for the check: at most this long
_DNS_TIMEOUT_S = 5.0
_SECRET_MIN_CHARS = 6  # shorter values ("1", "true") would blank out ordinary words
STAFF_ONLY = gettext_lazy(
    "Only site staff define stdio MCP servers (they run programs on the server).")


@dataclass(frozen=True, slots=True)
class HttpServerInput:
    """A team's HTTP server as its managers describe it. ``headers``: name -> value, or None
    to keep the stored value of that header; ``enabled_tools``: None for every tool."""

    name: str
    transport: str
    url: str
    headers: Mapping[str, str | None] = field(default_factory=dict)
    enabled: bool = True
    enabled_tools: Sequence[str] | None = None
    connect_timeout_s: float = 15.0
    call_timeout_s: float = 120.0
    sign_in: str = ""  # McpSignIn: "", "team" or "person"
    oauth_client_id: str = ""
    oauth_client_secret: str | None = None  # None keeps the stored one; "" removes it


def merge_secrets(stored: Mapping[str, str], submitted: Mapping[str, str | None]
                  ) -> dict[str, str]:
    """The secrets to store: ``submitted`` with each None replaced by the stored value (blank
    keeps it). ``invalid`` for a None whose name has no stored value."""
    merged: dict[str, str] = {}
    for name, value in submitted.items():
        if value is None:
            if name not in stored:
                raise ApplicationError(ErrorCode.INVALID, _("%(name)s needs a value.")
                                       % {"name": name})
            value = stored[name]
        merged[name] = value
    return merged


# -- a team's HTTP servers ---------------------------------------------------------------------
def mcp_server_create_http(*, team: Team, by: User, data: HttpServerInput) -> McpServerConfig:
    """Add an HTTP server to ``team``. Errors: ``not_found``/``forbidden`` (not a manager);
    ``forbidden`` for a stdio server; ``invalid`` (a rule of the model, a URL the SSRF guard
    refuses); ``conflict`` (the team already has a server of that name)."""
    require_manager(by, team)
    _require_http(data.transport)
    server = McpServerConfig(team=team, created_by=by)
    _fill(server, data, stored_headers={})
    return _save(server, team)


def mcp_server_update(*, team: Team, server_id: int, by: User, data: HttpServerInput
                      ) -> McpServerConfig:
    """Change the team's HTTP server ``server_id``; errors as for
    :func:`mcp_server_create_http`, ``not_found`` for a server that is not the team's."""
    require_manager(by, team)
    server = _own_http_server(team, server_id)
    _require_http(data.transport)
    _fill(server, data, stored_headers=server.readable_headers())
    saved = _save(server, team)
    drop_stale_sign_ins(saved)  # a new URL: its old sign-ins are for another resource
    return saved


def mcp_server_delete(*, team: Team, server_id: int, by: User) -> None:
    """Delete the team's HTTP server ``server_id`` (``not_found``, ``forbidden`` as above) and
    revoke its sign-ins at their authorization server, best effort (``forget_sign_ins``)."""
    require_manager(by, team)
    server = _own_http_server(team, server_id)
    sign_ins = list(server.oauth_connections.all())
    server.delete()
    forget_sign_ins(sign_ins)


def _own_http_server(team: Team, server_id: int) -> McpServerConfig:
    server = team_mcp_server(team, server_id)
    if server is None:
        raise not_found("MCP server")
    if server.is_stdio:
        raise ApplicationError(ErrorCode.FORBIDDEN, STAFF_ONLY)
    return server


def _require_http(transport: str) -> None:
    if transport == McpTransport.STDIO:
        raise ApplicationError(ErrorCode.FORBIDDEN, STAFF_ONLY)
    if transport not in HTTP_TRANSPORTS:
        raise ApplicationError(ErrorCode.INVALID, _("Unknown MCP transport %(transport)r.")
                               % {"transport": transport})


def _fill(server: McpServerConfig, data: HttpServerInput, *,
          stored_headers: Mapping[str, str]) -> None:
    server.name = data.name.strip()
    server.transport = data.transport
    server.url = data.url.strip()
    server.set_secrets(headers=merge_secrets(stored_headers, data.headers))
    server.enabled = data.enabled
    server.enabled_tools = (None if data.enabled_tools is None
                            else list(dict.fromkeys(t.strip() for t in data.enabled_tools)))
    server.connect_timeout_s = data.connect_timeout_s
    server.call_timeout_s = data.call_timeout_s
    server.sign_in = data.sign_in
    server.oauth_client_id = data.oauth_client_id.strip()
    if data.oauth_client_secret is not None:
        server.oauth_client_secret = data.oauth_client_secret
    else:  # kept: unless no key opens it any more
        server.forget_unreadable_client_secret()


def _save(server: McpServerConfig, team: Team) -> McpServerConfig:
    if mcp_name_taken(team, server.name, exclude=server.pk):
        raise _name_conflict(server.name)
    try:
        server.full_clean()
    except ValidationError as exc:
        raise _invalid(exc) from None
    mcp_url_check(server.url)
    try:
        with transaction.atomic():
            server.save()
    except IntegrityError:  # the same name, saved meanwhile
        raise _name_conflict(server.name) from None
    return server


def mcp_name_taken(team: Team, name: str, *, exclude: int | None = None) -> bool:
    """Whether ``team`` already runs a server called ``name`` (its own, or a catalog entry it
    enabled): two would share the tool prefix ``mcp__<name>__``."""
    own = McpServerConfig.objects.filter(team=team, name=name).exclude(pk=exclude)
    enabled = TeamMcpEnablement.objects.filter(team=team, server__name=name).exclude(
        server_id=exclude)
    return own.exists() or enabled.exists()


def _name_conflict(name: str) -> ApplicationError:
    return ApplicationError(ErrorCode.CONFLICT,
                            _("The team already has an MCP server called %(name)r.")
                            % {"name": name})


def _invalid(exc: ValidationError) -> ApplicationError:
    if hasattr(exc, "error_dict"):
        name, errors = next(iter(exc.error_dict.items()))
        where = "" if name == "__all__" else f"{name.replace('_', ' ')}: "
        return ApplicationError(ErrorCode.INVALID, f"{where}{errors[0].messages[0]}")
    return ApplicationError(ErrorCode.INVALID, exc.messages[0])


def mcp_url_check(url: str) -> None:
    """Refuse (``invalid``) a URL the SSRF guard refuses now. A name that does not resolve at
    the moment is let through: every request of a run is checked again anyway."""
    if not url:
        return
    policy = NetworkPolicy.build(allow_private_network=settings.CONFAB["ALLOW_PRIVATE_NETWORK"])
    try:
        async_to_sync(_guard)(url, policy)
    except UrlRefused as exc:
        raise ApplicationError(ErrorCode.INVALID, _("The URL is refused: %(reason)s.")
                               % {"reason": exc.reason}) from None


async def _guard(url: str, policy: NetworkPolicy) -> None:
    unresolved = False

    async def resolver(host: str, port: int) -> list[IPAddress]:
        nonlocal unresolved
        try:
            async with asyncio.timeout(_DNS_TIMEOUT_S):
                return await system_resolver(host, port)
        except (OSError, TimeoutError):
            unresolved = True
            raise OSError("not resolved") from None

    try:
        await check_url(url, policy, resolver)
    except UrlRefused:
        if not unresolved:
            raise


# -- the catalog -------------------------------------------------------------------------------
def mcp_catalog_enable(*, team: Team, server_id: int, by: User) -> TeamMcpEnablement:
    """Turn the catalog entry ``server_id`` on for ``team`` (idempotent). Errors:
    ``not_found``/``forbidden`` (not a manager); ``not_found`` (no such enabled catalog entry);
    ``conflict`` (the team has its own server of that name)."""
    require_manager(by, team)
    entry = mcp_catalog_entry(server_id)
    if entry is None:
        raise not_found("MCP server")
    with transaction.atomic():
        existing = TeamMcpEnablement.objects.filter(team=team, server=entry).first()
        if existing is not None:
            return existing
        if mcp_name_taken(team, entry.name):
            raise _name_conflict(entry.name)
        return TeamMcpEnablement.objects.create(team=team, server=entry, enabled_by=by)


@transaction.atomic
def mcp_catalog_disable(*, team: Team, server_id: int, by: User) -> None:
    """Turn the catalog entry ``server_id`` off for ``team`` (idempotent; ``not_found`` for an
    id that is no catalog entry)."""
    require_manager(by, team)
    if not McpServerConfig.objects.filter(pk=server_id, team__isnull=True,
                                          catalog=True).exists():
        raise not_found("MCP server")
    TeamMcpEnablement.objects.filter(team=team, server_id=server_id).delete()


# -- test connection ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class McpProbeReport:
    """What "test connection" found: ``ok`` when it connected and listed the tools; ``state``
    and ``message`` (a sentence: why it failed), ``protocol_version``, ``sandbox`` (stdio:
    how it ran) and the ``tools`` it lists. Never a secret: configured values are redacted."""

    server: str
    ok: bool
    state: str
    message: str
    protocol_version: str | None = None
    sandbox: str | None = None
    tools: tuple[McpToolInfo, ...] = ()


def mcp_server_test(*, team: Team, server_id: int, by: User) -> McpProbeReport:
    """Test the team's server ``server_id`` or an enabled catalog entry (``not_found``,
    ``forbidden`` as above). A server that needs a sign-in is tested with the one a run of
    ``by`` would use (the team's, or ``by``'s own); without one the report says to sign in
    first and nothing is connected."""
    require_manager(by, team)
    server = team_mcp_visible_server(team, server_id)
    if server is None:
        raise not_found("MCP server")
    if not server.needs_sign_in:
        return mcp_server_probe(server=server)
    try:
        token = run_access_token(server, team, by)
    except NotSignedIn as missing:
        whose = "the team's" if missing.for_team else "your own"
        return McpProbeReport(server.name, False, "not_signed_in",
                              f"it needs a sign-in ({whose}): sign in first")
    except httpx2.HTTPError as exc:
        return McpProbeReport(server.name, False, "failed", "its sign-in could not be "
                              f"refreshed (the server did not answer: {type(exc).__name__})")
    return mcp_server_probe(server=server, access_token=token)


def mcp_server_probe(*, server: McpServerConfig, access_token: str | None = None
                     ) -> McpProbeReport:
    """Connect to ``server`` (with ``access_token`` as its bearer token, for a server that
    needs a sign-in), list its tools and disconnect (the admin's action; callers check who
    may). Waits at most :data:`PROBE_CONNECT_TIMEOUT_S` (or the server's shorter timeout)."""
    try:
        spec = mcp_spec(server, access_token=access_token)
    except (ValueError, DecryptionError) as exc:
        return McpProbeReport(server.name, False, "failed",
                              f"its stored configuration cannot be used ({exc})")
    spec = replace(spec, connect_timeout_s=min(spec.connect_timeout_s, PROBE_CONNECT_TIMEOUT_S))
    conf = settings.CONFAB
    status = async_to_sync(probe_server)(
        spec, allow_private_network=conf["ALLOW_PRIVATE_NETWORK"], sandbox=conf["SANDBOX"])
    return _report(status, [*spec.env.values(), *spec.headers.values()])


def _report(status: ServerStatus, secrets: Iterable[str]) -> McpProbeReport:
    hide = sorted((s for s in secrets if len(s) >= _SECRET_MIN_CHARS), key=len, reverse=True)

    def clean(text: str | None) -> str | None:
        if text is None:
            return None
        for secret in hide:
            text = text.replace(secret, "[redacted]")
        return text

    ok = status.state == "connected"
    if ok:
        message = (f"connected (MCP {status.protocol_version or 'unknown version'}); "
                   f"{len(status.tools)} tool(s)")
    else:
        message = f"{status.state}: {status.detail}"
    return McpProbeReport(
        server=status.name, ok=ok, state=status.state, message=clean(message) or "",
        protocol_version=status.protocol_version, sandbox=clean(status.sandbox),
        tools=tuple(replace(tool, description=clean(tool.description) or "")
                    for tool in status.tools))
