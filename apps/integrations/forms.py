"""Forms of the team settings page: the default model, the tool policy and the team's HTTP MCP
servers; :class:`SecretMapField` (write-only environment or headers) is the admin's too."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from django import forms
from django.utils.formats import number_format
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.engine.tools.base import BaseTool
from apps.engine.tools.defaults import default_tools
from apps.integrations.mcp_services import HttpServerInput
from apps.integrations.models import (
    ENV_NAME_RE,
    HEADER_NAME_RE,
    MAX_CALL_TIMEOUT_S,
    MAX_CONNECT_TIMEOUT_S,
    MCP_NAME_MAX,
    MIN_TIMEOUT_S,
    McpServerConfig,
    McpSignIn,
    McpTransport,
    ModelConfig,
)
from apps.integrations.policy import needs_approval

__all__ = [
    "AgentHandleForm",
    "BuiltinTool",
    "DefaultModelForm",
    "McpHttpServerForm",
    "PER_CALL_RULES",
    "SecretMapField",
    "ToolPolicyForm",
    "builtin_tools",
    "tool_names",
]

DEFAULT, REQUIRE, EXEMPT = "default", "require", "exempt"


ASKS, RUNS_UNASKED, ASKS_SOME = "asks", "runs unasked", "asks for some calls"
_DEFAULT_LABELS = {ASKS: _("Default: asks"), RUNS_UNASKED: _("Default: runs unasked"),
                   ASKS_SOME: _("Default: asks for some calls")}
# The engine cannot import Django, so a tool whose approval depends on the call says for which
# calls in English, in the docstring of its ``needs_approval``; a person reads it from here.
PER_CALL_RULES = {"Bash": _("Every command the analyzer cannot prove read-only.")}


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """A built-in tool as the policy form shows it: ``default`` says whether it asks for
    approval by itself (:data:`ASKS`, :data:`RUNS_UNASKED` or :data:`ASKS_SOME`); ``rule`` says
    for which calls, when it depends on the call (:data:`PER_CALL_RULES`, else the engine's
    English)."""

    name: str
    default: str
    rule: str = ""


@cache
def builtin_tools() -> tuple[BuiltinTool, ...]:
    """The built-in tools of every run, in the order the model sees them."""
    return tuple(_describe(tool) for tool in default_tools())


def _describe(tool: Any) -> BuiltinTool:
    method = type(tool).needs_approval
    name = tool.spec.name
    if method is not BaseTool.needs_approval:  # decided per call (Bash: unless read-only)
        return BuiltinTool(name, ASKS_SOME, PER_CALL_RULES.get(name, inspect.getdoc(method) or ""))
    return BuiltinTool(name, ASKS if tool.spec.requires_approval else RUNS_UNASKED)


class AgentHandleForm(forms.Form):
    """The team's name for its agent (the service checks what it may be)."""

    handle = forms.CharField(max_length=31, label=_("Agent handle"),
                             help_text=_("People call the agent with @ and this name in "
                                         "conversations where it answers when mentioned; "
                                         "@agent always works too."))


class DefaultModelForm(forms.Form):
    """The team's default model: one of the enabled models, or the site's default."""

    model = forms.ModelChoiceField(
        queryset=ModelConfig.objects.filter(enabled=True, provider__enabled=True)
        .select_related("provider").order_by("provider__name", "display_name", "model_id"),
        required=False, empty_label=_("Site default (the first enabled model)"),
        label=_("Default model"),
    )

    chat_models = forms.ModelMultipleChoiceField(
        queryset=ModelConfig.objects.filter(enabled=True, provider__enabled=True)
        .select_related("provider").order_by("provider__name", "display_name", "model_id"),
        required=False, widget=forms.CheckboxSelectMultiple,
        label=_("Models members may choose in a conversation"),
        help_text=_("None ticked: every enabled model. The default model is always offered."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].label_from_instance = _model_label
        self.fields["chat_models"].label_from_instance = _model_label


def _model_label(model: ModelConfig) -> str:
    return gettext("%(model)s (%(provider)s, %(tokens)s tokens)") % {
        "model": model, "provider": model.provider.name,
        "tokens": number_format(model.context_window, force_grouping=True)}


class ToolPolicyForm(forms.Form):
    """One choice per built-in tool: follow its default, always ask, or never ask. Policy
    entries for other tools (MCP tools) are kept as they are."""

    def __init__(self, *args: Any, policy: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.policy = policy if isinstance(policy, Mapping) else {}
        for tool in builtin_tools():
            self.fields[tool.name] = forms.ChoiceField(
                label=tool.name, initial=_choice(policy, tool.name),
                help_text=tool.rule, widget=forms.RadioSelect,
                choices=[(DEFAULT, _DEFAULT_LABELS[tool.default]), (REQUIRE, _("Always ask")),
                         (EXEMPT, _("Never ask"))],
            )

    def lists(self) -> tuple[list[str], list[str]]:
        """``(require, exempt)`` to store: the choices made here plus the other tools'."""
        ours = {tool.name for tool in builtin_tools()}
        lists: dict[str, list[str]] = {REQUIRE: [], EXEMPT: []}
        for key, names in lists.items():
            stored = self.policy.get(key)
            if isinstance(stored, list):
                names.extend(name for name in stored if name not in ours)
        for tool in builtin_tools():
            choice = self.cleaned_data[tool.name]
            if choice != DEFAULT:
                lists[choice].append(tool.name)
        return lists[REQUIRE], lists[EXEMPT]


def _choice(policy: Mapping[str, Any], name: str) -> str:
    """The stored choice for ``name`` (``require`` wins over ``exempt``, as for runs)."""
    if needs_approval(policy, name, default=False):
        return REQUIRE
    return EXEMPT if not needs_approval(policy, name, default=True) else DEFAULT


# -- MCP servers -------------------------------------------------------------------------------
class KeysOnlyTextarea(forms.Textarea):
    """A textarea of ``NAME<sep>value`` lines that renders the names only: a value typed once
    (or stored) never comes back to the browser, not even when the form is shown again with an
    error."""

    def __init__(self, separator: str, **kwargs: Any) -> None:
        attrs = {"rows": 3, "autocomplete": "off", "spellcheck": "false", **kwargs}
        super().__init__(attrs=attrs)
        self.separator = separator

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, Mapping):
            names = list(value)
        else:
            names = [line.split(self.separator, 1)[0].strip()
                     for line in str(value or "").splitlines()]
        text = "\n".join(f"{name}{self.separator}" for name in names if name)
        return text or None


class SecretMapField(forms.CharField):
    """Write-only secrets as ``NAME=value`` lines (``env``) or ``Name: value`` lines
    (``headers``). Cleans to ``{name: value}``, where a line with a name and no value gives
    None: "keep the stored value". Names left out are removed. The form shows the stored names
    with blank values."""

    def __init__(self, *, kind: str, **kwargs: Any) -> None:
        self.separator, self.name_re, self.bad_name = (
            ("=", ENV_NAME_RE, _("Line %(number)d: %(name)r is not an environment variable name "
                                 "(write NAME=value, one per line).")) if kind == "env"
            else (":", HEADER_NAME_RE, _("Line %(number)d: %(name)r is not a header name (write "
                                         "Name: value, one per line).")))
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        super().__init__(widget=KeysOnlyTextarea(self.separator), **kwargs)

    def to_python(self, value: Any) -> dict[str, str | None]:  # type: ignore[override]
        if isinstance(value, Mapping):
            return {str(k): None for k in value}
        secrets: dict[str, str | None] = {}
        for number, line in enumerate(str(value or "").splitlines(), start=1):
            if not line.strip():
                continue
            name, _, secret = line.partition(self.separator)
            name, secret = name.strip(), secret.strip()
            if not re.fullmatch(self.name_re, name):
                raise forms.ValidationError(self.bad_name % {"number": number, "name": name})
            if name in secrets:
                raise forms.ValidationError(gettext("%(name)s is given twice.") % {"name": name})
            secrets[name] = secret or None
        return secrets

    def validate(self, value: Any) -> None:
        pass


def tool_names(text: str) -> list[str] | None:
    """Tool names separated by spaces, commas or new lines; None when there are none (all)."""
    names = [name for name in re.split(r"[\s,]+", text) if name]
    return list(dict.fromkeys(names)) or None


class McpHttpServerForm(forms.Form):
    """A team's HTTP MCP server, as its owners and admins set it up (stdio servers are for
    site staff, in the admin)."""

    name = forms.RegexField(
        regex=r"^[A-Za-z0-9_-]+$", max_length=MCP_NAME_MAX, label=_("Name"),
        help_text=_("Letters, digits, _ and -; the agent sees the tools as mcp__NAME__TOOL."))
    transport = forms.ChoiceField(label=_("Transport"), choices=[
        (McpTransport.STREAMABLE_HTTP.value, McpTransport.STREAMABLE_HTTP.label),
        (McpTransport.SSE.value, McpTransport.SSE.label)])
    url = forms.CharField(label=_("URL"), max_length=500,
                          widget=forms.URLInput(attrs={"placeholder": "https://…/mcp"}))
    headers = SecretMapField(
        kind="headers", label=_("Headers"),
        help_text=_("One “Name: value” per line, e.g. Authorization: Bearer …. Values are "
                    "write-only: a name left blank keeps its stored value; remove a line to "
                    "remove the header."))
    enabled = forms.BooleanField(label=_("Enabled"), required=False, initial=True)
    enabled_tools = forms.CharField(
        label=_("Allowed tools"), required=False, widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("The server's tool names the agent may use; empty: all of them."))
    connect_timeout_s = forms.FloatField(
        label=_("Connect timeout (s)"), initial=15.0, min_value=MIN_TIMEOUT_S,
        max_value=MAX_CONNECT_TIMEOUT_S)
    call_timeout_s = forms.FloatField(
        label=_("Call timeout (s)"), initial=120.0, min_value=MIN_TIMEOUT_S,
        max_value=MAX_CALL_TIMEOUT_S)
    sign_in = forms.ChoiceField(
        label=_("Sign-in (OAuth)"), choices=McpSignIn.choices, required=False,
        help_text=_("Whether the server needs an OAuth sign-in: once for the team, or by each "
                    "person (a run then uses the sign-in of whoever started it)."))
    oauth_client_id = forms.CharField(
        label=_("OAuth client id"), required=False, max_length=300,
        help_text=_("Only when the server's authorization server does not let confab register "
                    "itself: the client id registered there."))
    oauth_client_secret = forms.CharField(
        label=_("OAuth client secret"), required=False, strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Write-only: leave blank to keep the stored secret."))

    @classmethod
    def of(cls, server: McpServerConfig) -> McpHttpServerForm:
        """The form showing ``server`` (header names only)."""
        return cls(initial={
            "name": server.name, "transport": server.transport, "url": server.url,
            "headers": dict.fromkeys(server.readable_headers(), ""), "enabled": server.enabled,
            "enabled_tools": " ".join(server.enabled_tools or []),
            "connect_timeout_s": server.connect_timeout_s,
            "call_timeout_s": server.call_timeout_s, "sign_in": server.sign_in,
            "oauth_client_id": server.oauth_client_id})

    def to_input(self) -> HttpServerInput:
        data = self.cleaned_data
        return HttpServerInput(
            name=data["name"], transport=data["transport"], url=data["url"],
            headers=data["headers"], enabled=data["enabled"],
            enabled_tools=tool_names(data["enabled_tools"]),
            connect_timeout_s=data["connect_timeout_s"], call_timeout_s=data["call_timeout_s"],
            sign_in=data["sign_in"], oauth_client_id=data["oauth_client_id"],
            oauth_client_secret=data["oauth_client_secret"] or None)
