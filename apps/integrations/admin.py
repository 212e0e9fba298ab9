"""Admin for site staff: providers (the API key write-only), models, MCP servers.

The key is never rendered: the form has no field bound to ``api_key`` at all, only an empty
password input that replaces the stored key when filled in, and a box to remove it; pages show
whether a key is stored, never what it is. MCP servers' environment and headers work the same
way (:class:`~apps.integrations.forms.SecretMapField`: names shown, values write-only). Staff
are the only ones who define stdio MCP servers (for one team, or as catalog entries).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import format_lazy
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from apps.common.errors import ApplicationError
from apps.engine.messages import ReasoningParams
from apps.integrations.builders import reasoning_params, validate_provider
from apps.integrations.crypto import secret_stored
from apps.integrations.forms import SecretMapField
from apps.integrations.mcp_services import (
    mcp_name_taken,
    mcp_server_probe,
    mcp_url_check,
    merge_secrets,
)
from apps.integrations.models import (
    HTTP_TRANSPORTS,
    UNREADABLE_SECRETS,
    McpServerConfig,
    ModelConfig,
    ProviderConfig,
    TeamMcpEnablement,
)
from apps.integrations.services import provider_fetch_models, provider_test_connection


class ProviderConfigForm(forms.ModelForm):
    new_api_key = forms.CharField(
        label=_("API key"), required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Write-only: stored encrypted and never shown again. Leave empty to keep "
                    "the stored key."),
    )
    clear_api_key = forms.BooleanField(label=_("Remove the stored key"), required=False)

    class Meta:
        model = ProviderConfig
        fields = ("name", "kind", "profile", "base_url", "enabled")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if "kind" in data:
            try:
                validate_provider(kind=data["kind"], profile=data.get("profile", ""))
            except ApplicationError as exc:
                raise forms.ValidationError(exc.message) from None
        if data.get("new_api_key") and data.get("clear_api_key"):
            raise forms.ValidationError(gettext("Either enter a new key or remove the stored one."))
        return data

    def save(self, commit: bool = True) -> ProviderConfig:
        if self.cleaned_data.get("new_api_key"):
            self.instance.api_key = self.cleaned_data["new_api_key"]
        elif self.cleaned_data.get("clear_api_key"):
            self.instance.api_key = ""
        return super().save(commit)


@admin.register(ProviderConfig)
class ProviderConfigAdmin(admin.ModelAdmin):
    form = ProviderConfigForm
    list_display = ("name", "kind", "profile", "base_url", "enabled", "key_stored")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "base_url")
    fieldsets = (
        (None, {"fields": ("name", "kind", "profile", "base_url", "enabled")}),
        (_("API key"), {"fields": ("key_stored", "new_api_key", "clear_api_key")}),
    )
    readonly_fields = ("key_stored",)
    actions = ("test_connection", "fetch_models")

    @admin.display(boolean=True, description=_("Key stored"))
    def key_stored(self, obj: ProviderConfig) -> bool:
        return secret_stored(obj, "api_key")  # also a key no configured key decrypts

    @admin.action(description=_("Test connection"))
    def test_connection(self, request: HttpRequest, queryset: QuerySet[ProviderConfig]) -> None:
        for config in queryset:
            try:
                report = provider_test_connection(config=config)
            except ApplicationError as exc:
                self.message_user(request, f"{config.name}: {exc.message}", messages.ERROR)
                continue
            level = messages.SUCCESS if report.ok else messages.ERROR
            self.message_user(request, f"{config.name}: {report.message}", level)

    @admin.action(description=_("Fetch models"))
    def fetch_models(self, request: HttpRequest, queryset: QuerySet[ProviderConfig]) -> None:
        for config in queryset:
            try:
                report = provider_fetch_models(config=config)
            except ApplicationError as exc:
                self.message_user(request, f"{config.name}: {exc.message}", messages.ERROR)
                continue
            counts = {"name": config.name, "created": report.created, "updated": report.updated}
            if report.failure is None:
                self.message_user(request, gettext(
                    "%(name)s: %(created)d model(s) created, %(updated)d updated.") % counts,
                    messages.SUCCESS)
            elif report.fallback:
                self.message_user(request, gettext(
                    "%(name)s: %(failure)s; used the built-in list of %(fallback)d model(s): "
                    "%(created)d model(s) created, %(updated)d updated.")
                    % {**counts, "failure": report.failure.message, "fallback": report.fallback},
                    messages.WARNING)
            else:
                self.message_user(request, gettext(
                    "%(name)s: %(failure)s; no built-in list to fall back on.")
                    % {"name": config.name, "failure": report.failure.message}, messages.ERROR)


class ModelConfigForm(forms.ModelForm):
    class Meta:
        model = ModelConfig
        fields = ("provider", "model_id", "display_name", "context_window",
                  "max_output_tokens", "extend_params", "default_reasoning", "supports_vision",
                  "enabled")

    def clean_extend_params(self) -> list[str]:
        """A list of ReasoningParams field names: the controls the UI shows."""
        value = self.cleaned_data["extend_params"]
        known = set(ReasoningParams.model_fields)
        if not isinstance(value, list) or not all(isinstance(v, str) and v in known
                                                  for v in value):
            raise forms.ValidationError(gettext(
                "A list of reasoning controls, among: %(known)s.")
                % {"known": ", ".join(sorted(known))})
        return value

    def clean_default_reasoning(self) -> dict[str, Any]:
        """A ReasoningParams object (``{}`` for none)."""
        value = self.cleaned_data["default_reasoning"]
        if not isinstance(value, dict):
            raise forms.ValidationError(gettext("An object of ReasoningParams fields, or {}."))
        try:
            reasoning_params(value)
        except ApplicationError as exc:
            raise forms.ValidationError(exc.message) from None
        return value


@admin.register(ModelConfig)
class ModelConfigAdmin(admin.ModelAdmin):
    form = ModelConfigForm
    list_display = ("model_id", "display_name", "provider", "context_window",
                    "max_output_tokens", "supports_vision", "enabled")
    list_filter = ("provider", "enabled")
    search_fields = ("model_id", "display_name")
    list_select_related = ("provider",)
    actions = ("enable", "disable")

    @admin.action(description=_("Enable the selected models"))
    def enable(self, request: HttpRequest, queryset: QuerySet[ModelConfig]) -> None:
        count = queryset.update(enabled=True)
        self.message_user(request, ngettext("%(count)d model enabled.", "%(count)d models enabled.",
                                            count) % {"count": count})

    @admin.action(description=_("Disable the selected models"))
    def disable(self, request: HttpRequest, queryset: QuerySet[ModelConfig]) -> None:
        count = queryset.update(enabled=False)
        self.message_user(request, ngettext("%(count)d model disabled.",
                                            "%(count)d models disabled.", count) % {"count": count})


# -- MCP servers -------------------------------------------------------------------------------
_WRITE_ONLY = _("Values are write-only: each stored name is listed with a blank value, which "
                "keeps it; type a value to replace it; remove the line to remove it.")


class McpServerConfigForm(forms.ModelForm):
    env_secrets = SecretMapField(
        kind="env", label=_("Environment"), help_text=format_lazy(
            "{} {}", _("stdio: NAME=value lines. The server gets only these (and a minimal "
                       "PATH, HOME...)."), _WRITE_ONLY))
    header_secrets = SecretMapField(
        kind="headers", label=_("Headers"), help_text=format_lazy(
            "{} {}", _("HTTP: “Name: value” lines sent with every request."), _WRITE_ONLY))
    new_oauth_client_secret = forms.CharField(
        label=_("OAuth client secret"), required=False, strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("HTTP with sign-in and a client id: write-only, blank keeps the stored one."))

    class Meta:
        model = McpServerConfig
        fields = ("name", "transport", "team", "catalog", "description", "enabled", "command",
                  "args", "read_paths", "sandbox", "network", "url", "sign_in",
                  "oauth_client_id", "enabled_tools", "connect_timeout_s", "call_timeout_s")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stored_env = self.instance.readable_env() if self.instance.pk else {}
        self.stored_headers = self.instance.readable_headers() if self.instance.pk else {}
        if self.instance.pk and not self.instance.secrets_readable:
            for name in ("env_secrets", "header_secrets"):
                self.fields[name].help_text = UNREADABLE_SECRETS
        self.fields["env_secrets"].initial = dict.fromkeys(self.stored_env, "")
        self.fields["header_secrets"].initial = dict.fromkeys(self.stored_headers, "")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        try:
            self.instance.set_secrets(
                env=merge_secrets(self.stored_env, data.get("env_secrets") or {}),
                headers=merge_secrets(self.stored_headers, data.get("header_secrets") or {}))
            if data.get("new_oauth_client_secret"):
                self.instance.oauth_client_secret = data["new_oauth_client_secret"]
            else:  # kept: unless no key opens it any more
                self.instance.forget_unreadable_client_secret()
        except ApplicationError as exc:
            # what is stored, as read (none of what no key opens: the model's own checks
            # would read that and fail, and this form shows no field of theirs)
            self.instance.set_secrets(env=self.stored_env, headers=self.stored_headers)
            raise forms.ValidationError(exc.message) from None
        team, name = data.get("team"), data.get("name")
        if team is not None and name and mcp_name_taken(team, name, exclude=self.instance.pk):
            self.add_error("name", gettext("%(team)s already runs an MCP server called %(name)r.")
                           % {"team": team, "name": name})
        if data.get("transport") in HTTP_TRANSPORTS and data.get("url"):
            try:
                mcp_url_check(data["url"])
            except ApplicationError as exc:
                self.add_error("url", exc.message)
        return data


@admin.register(McpServerConfig)
class McpServerConfigAdmin(admin.ModelAdmin):
    form = McpServerConfigForm
    list_display = ("name", "transport", "scope", "enabled", "secret_names")
    list_filter = ("transport", "catalog", "enabled")
    search_fields = ("name", "team__name", "command", "url")
    list_select_related = ("team",)
    fieldsets = (
        (None, {"fields": ("name", "transport", "team", "catalog", "description", "enabled")}),
        (_("stdio (a program on this server)"), {"fields": (
            "command", "args", "env_secrets", "read_paths", "sandbox", "network")}),
        ("HTTP", {"fields": ("url", "header_secrets", "sign_in", "oauth_client_id",
                             "new_oauth_client_secret")}),
        (_("Tools and timeouts"), {"fields": ("enabled_tools", "connect_timeout_s",
                                              "call_timeout_s")}),
    )
    actions = ("test_connection", "enable", "disable")

    @admin.display(description=_("Team"))
    def scope(self, obj: McpServerConfig) -> str:
        return gettext("catalog") if obj.catalog else str(obj.team)

    @admin.display(description=_("Secrets stored (names)"))
    def secret_names(self, obj: McpServerConfig) -> str:
        if not obj.secrets_readable:
            return gettext("cannot be decrypted: enter them again")
        return ", ".join(obj.env_names + obj.header_names) or "-"

    def save_model(self, request: HttpRequest, obj: McpServerConfig, form: Any,
                   change: bool) -> None:
        if not change:
            obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)

    @admin.action(description=_("Test connection (list the tools)"))
    def test_connection(self, request: HttpRequest,
                        queryset: QuerySet[McpServerConfig]) -> None:
        for server in queryset:
            report = mcp_server_probe(server=server)
            if not report.ok:
                self.message_user(request, f"{server.name}: {report.message}", messages.ERROR)
                continue
            tools = ", ".join(tool.name for tool in report.tools) or gettext("no tools")
            sandbox = f" [{report.sandbox}]" if report.sandbox else ""
            self.message_user(request, f"{server.name}: {report.message}: {tools}.{sandbox}",
                              messages.SUCCESS)

    @admin.action(description=_("Enable the selected servers"))
    def enable(self, request: HttpRequest, queryset: QuerySet[McpServerConfig]) -> None:
        count = queryset.update(enabled=True)
        self.message_user(request, ngettext("%(count)d server enabled.",
                                            "%(count)d servers enabled.", count) % {"count": count})

    @admin.action(description=_("Disable the selected servers"))
    def disable(self, request: HttpRequest, queryset: QuerySet[McpServerConfig]) -> None:
        count = queryset.update(enabled=False)
        self.message_user(request, ngettext("%(count)d server disabled.",
                                            "%(count)d servers disabled.", count)
                          % {"count": count})


@admin.register(TeamMcpEnablement)
class TeamMcpEnablementAdmin(admin.ModelAdmin):
    list_display = ("server", "team", "enabled_by", "created_at")
    list_filter = ("server",)
    search_fields = ("server__name", "team__name")
    list_select_related = ("server", "team", "enabled_by")
    readonly_fields = ("enabled_by",)
