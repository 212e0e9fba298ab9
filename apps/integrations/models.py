"""Where the models come from: ProviderConfig (a provider endpoint and its key), ModelConfig (a
model of it with its limits and controls), and each team's choice of default model; and the
team's MCP servers: McpServerConfig (a team's own, or a site catalog entry),
TeamMcpEnablement (a catalog entry a team turned on), and the OAuth sign-ins to servers that
need one: McpOAuthConnection (stored tokens) and McpOAuthFlow (a sign-in under way)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team
from apps.common.models import TimeStampedModel
from apps.integrations.crypto import (
    DecryptionError,
    EncryptedTextField,
    secret_opens,
    secret_stored,
)


class ProviderKind(models.TextChoices):
    """The wire protocol (DESIGN 2.3); OpenAI-compatible vendors are "openai" + a profile."""

    ANTHROPIC = "anthropic", _("Anthropic Messages")
    OPENAI = "openai", _("OpenAI-compatible Chat Completions")
    GEMINI = "gemini", _("Google Gemini")


class ProviderConfig(TimeStampedModel):
    """A provider endpoint, set up by site staff. ``base_url`` follows the vendor SDK's
    convention; ``profile`` names the OpenAI-compatible quirk profile (blank: from the host).
    ``api_key`` is encrypted at rest and write-only in the admin."""

    name = models.CharField(_("name"), max_length=100, unique=True)
    kind = models.CharField(_("protocol"), max_length=20, choices=ProviderKind.choices)
    profile = models.CharField(_("profile"), max_length=20, blank=True)
    base_url = models.URLField(_("base URL"), max_length=500)
    api_key = EncryptedTextField(_("API key"), blank=True)
    enabled = models.BooleanField(_("enabled"), default=True)

    class Meta:
        verbose_name = _("provider")
        verbose_name_plural = _("providers")

    def __str__(self) -> str:
        return self.name


class ModelConfig(TimeStampedModel):
    """A model of a provider. ``context_window`` and ``max_output_tokens`` (tokens) drive the
    context gauge and compaction; ``extend_params`` lists the reasoning controls the UI shows
    (names of ReasoningParams fields); ``default_reasoning`` is a ReasoningParams object;
    ``supports_vision``: it reads images (people's attachments)."""

    provider = models.ForeignKey(ProviderConfig, verbose_name=_("provider"),
                                 on_delete=models.CASCADE, related_name="models")
    model_id = models.CharField(_("model id"), max_length=200)
    display_name = models.CharField(_("display name"), max_length=200, blank=True)
    context_window = models.PositiveIntegerField(_("context window (tokens)"), default=200_000)
    max_output_tokens = models.PositiveIntegerField(_("max output tokens"), default=8_192)
    extend_params = models.JSONField(_("reasoning controls"), default=list, blank=True)
    default_reasoning = models.JSONField(_("default reasoning"), default=dict, blank=True)
    supports_vision = models.BooleanField(
        _("reads images"), default=True,
        help_text=_("The model reads images. Off: a message with images is refused with a "
                    "notice in the room, and earlier images are left out of its requests."))
    enabled = models.BooleanField(_("enabled"), default=True)

    class Meta:
        verbose_name = _("model")
        verbose_name_plural = _("models")
        constraints = [models.UniqueConstraint(fields=["provider", "model_id"],
                                               name="one_model_per_provider")]

    def __str__(self) -> str:
        return self.display_name or self.model_id


class TeamAIConfig(TimeStampedModel):
    """A team's choice of model (None: the site's first enabled model) and the models its
    members may choose per conversation (``chat_models``; none chosen: every enabled one)."""

    team = models.OneToOneField(Team, verbose_name=_("team"), on_delete=models.CASCADE,
                                related_name="ai_config")
    default_model = models.ForeignKey(ModelConfig, verbose_name=_("default model"), null=True,
                                      blank=True, on_delete=models.SET_NULL, related_name="+")
    chat_models = models.ManyToManyField(ModelConfig, verbose_name=_("chat models"), blank=True,
                                         related_name="+")

    class Meta:
        verbose_name = _("team's model choice")
        verbose_name_plural = _("teams' model choices")


# -- MCP servers (DESIGN 2.7, 3.6, 4) ----------------------------------------------------------
MCP_NAME_RE = r"[A-Za-z0-9_-]+"
MCP_NAME_MAX = 32  # mcp__<name>__<tool> must leave room for the tool within 64 characters
ENV_NAME_RE = r"[A-Za-z_][A-Za-z0-9_]*"
HEADER_NAME_RE = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"  # an HTTP token (RFC 9110 5.1)
MIN_TIMEOUT_S, MAX_CONNECT_TIMEOUT_S, MAX_CALL_TIMEOUT_S = 1.0, 60.0, 600.0


class McpTransport(models.TextChoices):
    """The three transports of the MCP SDK."""

    STDIO = "stdio", _("stdio (a program on this server)")
    STREAMABLE_HTTP = "streamable_http", _("Streamable HTTP")
    SSE = "sse", _("HTTP+SSE (older servers)")


HTTP_TRANSPORTS = (McpTransport.STREAMABLE_HTTP, McpTransport.SSE)


class McpSignIn(models.TextChoices):
    """Whether an HTTP server needs an OAuth sign-in, and whose (DESIGN 2.7)."""

    NONE = "", _("No sign-in")
    TEAM = "team", _("One sign-in for the team (an owner or admin signs in)")
    PERSON = "person", _("Each person signs in with their own account")


class McpServerConfig(TimeStampedModel):
    """An MCP server: one team's own (``team`` set) or a site catalog entry (``team`` null and
    ``catalog`` true) that a team's owners and admins enable for their team
    (:class:`TeamMcpEnablement`).

    stdio servers run a program on this machine, so only site staff define them, in the admin;
    HTTP servers (Streamable HTTP, HTTP+SSE) are also managed by a team's owners and admins.
    ``name`` is the tool prefix (``mcp__<name>__<tool>``). ``env`` (stdio) and ``headers``
    (HTTP) hold secrets: JSON objects stored encrypted, read through :meth:`env_map` and
    :meth:`header_map`, never shown back. ``enabled_tools``: the MCP tool names the agent may
    use (None: all). ``sandbox``, ``network`` and ``read_paths`` say how a stdio server is
    confined (see ``apps.engine.mcp.config.McpServerSpec``). Validation is :meth:`clean`.
    """

    name = models.CharField(
        _("name"), max_length=MCP_NAME_MAX,
        validators=[RegexValidator(f"^{MCP_NAME_RE}$", _(
            "Letters, digits, '_' and '-' only (it prefixes tool names)."))],
        help_text=_("The tool prefix: the agent sees the tools as mcp__NAME__TOOL."))
    transport = models.CharField(_("transport"), max_length=20, choices=McpTransport.choices)
    team = models.ForeignKey(Team, verbose_name=_("team"), null=True, blank=True,
                             on_delete=models.CASCADE, related_name="mcp_servers",
                             help_text=_("Empty for a catalog entry."))
    catalog = models.BooleanField(
        _("catalog entry"), default=False,
        help_text=_("A site catalog entry (no team): owners and admins of any team may enable "
                    "it for their team."))
    description = models.CharField(
        _("description"), max_length=300, blank=True,
        help_text=_("What it offers (the team settings page shows it)."))
    command = models.CharField(
        _("command"), max_length=500, blank=True,
        help_text=_("stdio: the program, by absolute path (e.g. a node or a virtualenv's "
                    "python)."))
    args = models.JSONField(_("arguments"), default=list, blank=True,
                            help_text=_("stdio: a JSON list of strings."))
    env = EncryptedTextField(_("environment"), blank=True)
    read_paths = models.JSONField(
        _("read paths"), default=list, blank=True,
        help_text=_("stdio, sandboxed: a JSON list of absolute directories the server may read "
                    "(its installation: a virtualenv, a node_modules); the rest of the host "
                    "but the system directories is hidden."))
    sandbox = models.BooleanField(
        _("sandboxed"), default=True,
        help_text=_("stdio: run inside bubblewrap where it works (the filesystem confined)."))
    network = models.BooleanField(
        _("network"), default=True,
        help_text=_("stdio, sandboxed: keep the host's network (most servers call an API)."))
    url = models.CharField(_("URL"), max_length=500, blank=True,
                           help_text=_("HTTP: the endpoint (checked by the SSRF guard)."))
    headers = EncryptedTextField(_("headers"), blank=True)
    sign_in = models.CharField(
        _("sign-in"), max_length=10, choices=McpSignIn.choices, blank=True,
        default=McpSignIn.NONE,
        help_text=_("HTTP: the server needs an OAuth 2.1 sign-in, once for the team or by each "
                    "person (a run uses the sign-in of the person who started it)."))
    oauth_client_id = models.CharField(
        _("OAuth client id"), max_length=300, blank=True,
        help_text=_("HTTP with sign-in: a client id registered with the server's authorization "
                    "server (empty: confab registers itself where the server offers it)."))
    oauth_client_secret = EncryptedTextField(_("OAuth client secret"), blank=True)
    enabled = models.BooleanField(_("enabled"), default=True)
    enabled_tools = models.JSONField(
        _("allowed tools"), null=True, blank=True,
        help_text=_("A JSON list of the tool names the agent may use; empty (null): all."))
    connect_timeout_s = models.FloatField(
        _("connect timeout (s)"), default=15.0,
        help_text=_("Seconds to start, initialize and list the tools (1-60)."))
    call_timeout_s = models.FloatField(
        _("call timeout (s)"), default=120.0,
        help_text=_("Seconds one tool call may take (1-600)."))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("created by"),
                                   null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        verbose_name = _("MCP server")
        verbose_name_plural = _("MCP servers")
        constraints = [
            models.UniqueConstraint(
                fields=["team", "name"], name="one_mcp_name_per_team",
                violation_error_message=_("The team already has an MCP server of this name.")),
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(team__isnull=True),
                name="one_mcp_name_per_catalog",
                violation_error_message=_("The catalog already has an MCP server of this name.")),
            models.CheckConstraint(
                condition=models.Q(team__isnull=True, catalog=True)
                | models.Q(team__isnull=False, catalog=False),
                name="mcp_catalog_xor_team"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_stdio(self) -> bool:
        return self.transport == McpTransport.STDIO

    @property
    def needs_sign_in(self) -> bool:
        return self.sign_in != McpSignIn.NONE

    def env_map(self) -> dict[str, str]:
        """The decrypted environment (stdio). Raises ValueError (not a JSON object) and
        DecryptionError (no configured key opens it)."""
        return _secret_map(self.env)

    def header_map(self) -> dict[str, str]:
        """The decrypted headers (HTTP); raises as :meth:`env_map`."""
        return _secret_map(self.headers)

    @property
    def secrets_readable(self) -> bool:
        """Whether the stored environment, headers and OAuth client secret decrypt (False: a
        CONFAB_FERNET_KEYS key was removed before ``rotate_secrets`` ran; they are entered
        again, and a save replaces them)."""
        return all(secret_opens(self, name) for name in ("env", "headers", "oauth_client_secret"))

    def forget_unreadable_client_secret(self) -> None:
        """Clear an OAuth client secret no configured key opens (a save would keep it, and
        validating it would fail): it is no secret any more, and the page asks for it again."""
        if not secret_opens(self, "oauth_client_secret"):
            self.oauth_client_secret = ""

    @property
    def secrets_notice(self) -> str:
        """:data:`UNREADABLE_SECRETS` while they cannot be decrypted, else ``""``."""
        return "" if self.secrets_readable else str(UNREADABLE_SECRETS)

    def readable_env(self) -> dict[str, str]:
        """:meth:`env_map`, or ``{}`` while it cannot be decrypted."""
        return self.env_map() if secret_opens(self, "env") else {}

    def readable_headers(self) -> dict[str, str]:
        """:meth:`header_map`, or ``{}`` while it cannot be decrypted."""
        return self.header_map() if secret_opens(self, "headers") else {}

    @property
    def env_names(self) -> list[str]:
        """The names of the environment's variables (what a page may show; none while they
        cannot be decrypted)."""
        return sorted(self.readable_env())

    @property
    def header_names(self) -> list[str]:
        """The names of the headers (what a page may show; none while they cannot be
        decrypted)."""
        return sorted(self.readable_headers())

    def set_secrets(self, *, env: Mapping[str, str] | None = None,
                    headers: Mapping[str, str] | None = None) -> None:
        """Replace the stored environment and/or headers (encrypted when saved)."""
        if env is not None:
            self.env = json.dumps(dict(env)) if env else ""
        if headers is not None:
            self.headers = json.dumps(dict(headers)) if headers else ""

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        for field, problem in _mcp_problems(self):
            errors.setdefault(field, []).append(problem)
        if errors:
            raise ValidationError(errors)


class TeamMcpEnablement(TimeStampedModel):
    """A catalog MCP server a team enabled (its owners' and admins' choice)."""

    team = models.ForeignKey(Team, verbose_name=_("team"), on_delete=models.CASCADE,
                             related_name="mcp_enablements")
    server = models.ForeignKey(McpServerConfig, verbose_name=_("MCP server"),
                               on_delete=models.CASCADE,
                               related_name="enablements",
                               limit_choices_to={"catalog": True})
    enabled_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("enabled by"),
                                   null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")

    class Meta:
        verbose_name = _("catalog MCP server enabled for a team")
        verbose_name_plural = _("catalog MCP servers enabled for teams")
        constraints = [models.UniqueConstraint(fields=["team", "server"],
                                               name="one_enablement_per_team")]

    def __str__(self) -> str:
        return f"{self.server} for {self.team}"


class McpOAuthConnection(TimeStampedModel):
    """A sign-in to a server that needs one: the team's (``user`` null, ``sign_in`` "team") or
    one person's (``user`` set, ``sign_in`` "person"), for ``team`` (a catalog server is signed
    in per team). ``authorization_server`` is the discovery result
    (``apps.engine.mcp.oauth.AuthorizationServer.to_json``); ``client_info`` (the registered
    client, with its secret), ``access_token`` and ``refresh_token`` are encrypted at rest and
    never leave the server but towards the MCP server. ``expires_at``: when the access token
    expires (None: the server did not say); ``authorized_by``: who signed in."""

    server = models.ForeignKey(McpServerConfig, verbose_name=_("MCP server"),
                               on_delete=models.CASCADE,
                               related_name="oauth_connections")
    team = models.ForeignKey(Team, verbose_name=_("team"), on_delete=models.CASCADE,
                             related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("person"), null=True,
                             blank=True,
                             on_delete=models.CASCADE, related_name="+")
    authorized_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("signed in by"),
                                      null=True, blank=True,
                                      on_delete=models.SET_NULL, related_name="+")
    authorization_server = models.JSONField(_("authorization server"))
    client_info = EncryptedTextField(_("client registration"))
    access_token = EncryptedTextField(_("access token"))
    refresh_token = EncryptedTextField(_("refresh token"), blank=True)
    scope = models.CharField(_("scope"), max_length=500, blank=True)
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)

    class Meta:
        verbose_name = _("MCP sign-in")
        verbose_name_plural = _("MCP sign-ins")
        constraints = [
            models.UniqueConstraint(fields=["server", "team"], condition=models.Q(user=None),
                                    name="one_team_sign_in_per_server"),
            models.UniqueConstraint(fields=["server", "team", "user"],
                                    condition=models.Q(user__isnull=False),
                                    name="one_person_sign_in_per_server"),
        ]

    def __str__(self) -> str:
        return f"sign-in to {self.server} for {self.user or self.team}"


class McpOAuthFlow(TimeStampedModel):
    """A sign-in under way, between the redirect to the authorization server and the callback
    (which may reach another process). ``state_hash``: SHA-256 of the ``state`` parameter;
    ``session_hash``: SHA-256 of the session key of the person who started it (the callback
    must come from the same session and person); ``code_verifier`` (PKCE) and ``client_info``
    encrypted; ``redirect_uri``: the exact URI sent, which the token request repeats. Used
    once: the callback deletes it."""

    state_hash = models.CharField(_("state hash"), max_length=64, unique=True)
    session_hash = models.CharField(_("session hash"), max_length=64)
    server = models.ForeignKey(McpServerConfig, verbose_name=_("MCP server"),
                               on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey(Team, verbose_name=_("team"), on_delete=models.CASCADE,
                             related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("person"),
                             on_delete=models.CASCADE,
                             related_name="+")
    for_team = models.BooleanField(_("for the team"),
                                   help_text=_("The team's sign-in (else the person's own)."))
    authorization_server = models.JSONField(_("authorization server"))
    client_info = EncryptedTextField(_("client registration"))
    code_verifier = EncryptedTextField(_("code verifier"))
    redirect_uri = models.CharField(_("redirect URI"), max_length=500)

    class Meta:
        verbose_name = _("MCP sign-in under way")
        verbose_name_plural = _("MCP sign-ins under way")


UNREADABLE_SECRETS = _(
    "Its stored secrets cannot be decrypted with CONFAB_FERNET_KEYS (was a key removed before "
    "rotate_secrets ran?): enter them again; saving replaces them.")
"""Shown where an MCP server's environment or headers would be (:attr:`~McpServerConfig.
secrets_readable` False)."""


def _secret_map(stored: str | None) -> dict[str, str]:
    if not stored:
        return {}
    value = json.loads(stored)
    if not isinstance(value, dict):
        raise ValueError("a stored MCP secret map is not a JSON object")
    return {str(k): str(v) for k, v in value.items()}


def _mcp_problems(server: McpServerConfig) -> Iterator[tuple[str, str]]:
    """(field, sentence) for each rule ``server`` breaks."""
    if server.catalog and server.team_id is not None:
        yield "catalog", _("A catalog entry belongs to no team.")
    if not server.catalog and server.team_id is None:
        yield "team", _("Choose the team, or make it a catalog entry.")
    if server.transport == McpTransport.STDIO:
        yield from _stdio_problems(server)
    elif server.transport in HTTP_TRANSPORTS:
        yield from _http_problems(server)
    yield from _list_problems("args", server.args, allow_none=False)
    yield from _list_problems("enabled_tools", server.enabled_tools, allow_none=True)
    for field, top in (("connect_timeout_s", MAX_CONNECT_TIMEOUT_S),
                       ("call_timeout_s", MAX_CALL_TIMEOUT_S)):
        value = getattr(server, field)
        if not isinstance(value, int | float) or not MIN_TIMEOUT_S <= value <= top:
            yield field, _("Seconds, from %(least)g to %(most)g.") % {"least": MIN_TIMEOUT_S,
                                                                     "most": top}


def _stdio_problems(server: McpServerConfig) -> Iterator[tuple[str, str]]:
    if not server.command.strip():
        yield "command", _("A stdio server needs a command.")
    if (server.needs_sign_in or server.oauth_client_id
            or secret_stored(server, "oauth_client_secret")):
        yield "sign_in", _("Only HTTP servers sign in with OAuth.")
    if server.url or server.headers:
        yield "url", _("A stdio server has no URL or headers.")
    yield from _list_problems("read_paths", server.read_paths, allow_none=False)
    if isinstance(server.read_paths, list) and not all(
            isinstance(p, str) and p.startswith("/") for p in server.read_paths):
        yield "read_paths", _("Absolute paths only.")
    try:
        names = server.env_map()
    except ValueError:
        yield "env", _("The environment is not a JSON object of strings.")
        return
    except DecryptionError:
        yield "env", UNREADABLE_SECRETS
        return
    for name in names:
        if not re.fullmatch(ENV_NAME_RE, name):
            yield "env", _("%(name)r is not an environment variable name.") % {"name": name}


def _http_problems(server: McpServerConfig) -> Iterator[tuple[str, str]]:
    if not server.url.strip():
        yield "url", _("An HTTP server needs a URL.")
    elif not re.match(r"^https?://[^/?#]", server.url, re.IGNORECASE):
        yield "url", _("An http:// or https:// URL.")
    if server.command or server.args or server.env or server.read_paths:
        yield "command", _("An HTTP server has no command, arguments, environment or read paths.")
    client_secret = secret_stored(server, "oauth_client_secret")  # whether, not what
    if client_secret and not server.oauth_client_id:
        yield "oauth_client_id", _("A client secret needs its client id.")
    if (server.oauth_client_id or client_secret) and not server.needs_sign_in:
        yield "sign_in", _("A client id is for a server that needs a sign-in.")
    try:
        names = server.header_map()
    except ValueError:
        yield "headers", _("The headers are not a JSON object of strings.")
        return
    except DecryptionError:
        yield "headers", UNREADABLE_SECRETS
        return
    for name in names:
        if not re.fullmatch(HEADER_NAME_RE, name):
            yield "headers", _("%(name)r is not a header name.") % {"name": name}


def _list_problems(field: str, value: Any, *, allow_none: bool) -> Iterator[tuple[str, str]]:
    if value is None and allow_none:
        return
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        yield field, (_("A list of non-empty strings (or null: all).") if allow_none
                      else _("A list of non-empty strings."))
