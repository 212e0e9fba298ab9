"""The team settings page: default model, agent handle, tool policy and MCP servers; and the
OAuth sign-in pages of MCP servers that need one (``mcp_oauth``: a person's own sign-in is theirs
to make, so those pages are for members too).

Owners and admins only: another team's id answers 404 exactly like a missing one, a member
without the role 403 (``team_membership``); so does another team's MCP server id. Each form
posts to its own URL and calls one service. "Test connection" answers with the settings page
and the server's tools (or why it failed), never a secret.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.models import Team, User
from apps.accounts.pages import team_membership
from apps.common.errors import ApplicationError, ErrorCode
from apps.common.web import refusal
from apps.integrations.forms import (
    AgentHandleForm,
    DefaultModelForm,
    McpHttpServerForm,
    ToolPolicyForm,
)
from apps.integrations.mcp_oauth import (
    SignOut,
    connection_for,
    mark_sign_ins,
    personal_sign_ins,
    sign_in_finish,
    sign_in_server,
    sign_in_start,
    sign_out,
)
from apps.integrations.mcp_selectors import McpOverview, team_mcp_overview, team_mcp_server
from apps.integrations.mcp_services import (
    McpProbeReport,
    mcp_catalog_disable,
    mcp_catalog_enable,
    mcp_server_create_http,
    mcp_server_delete,
    mcp_server_test,
    mcp_server_update,
)
from apps.integrations.models import TeamAIConfig
from apps.integrations.services import (
    team_set_agent_handle,
    team_set_default_model,
    team_set_tool_policy,
)

__all__ = [
    "mcp_catalog_off",
    "mcp_catalog_on",
    "mcp_server_add",
    "mcp_server_check",
    "mcp_server_edit",
    "mcp_server_remove",
    "mcp_sign_in",
    "mcp_sign_ins",
    "mcp_sign_out",
    "mcp_oauth_callback",
    "team_agent_handle",
    "team_model",
    "team_settings",
    "team_tools",
]


@login_required
@require_http_methods(["GET"])
def team_settings(request: HttpRequest, team_id: int) -> HttpResponse:
    """The settings page."""
    return _settings_page(request, team_membership(request, team_id, manage=True).team)


@login_required
@require_POST
def team_model(request: HttpRequest, team_id: int) -> HttpResponse:
    """Choose the team's default model."""
    team = team_membership(request, team_id, manage=True).team
    form = DefaultModelForm(request.POST)
    if not form.is_valid():
        return _settings_page(request, team, model_form=form)
    try:
        team_set_default_model(team=team, model=form.cleaned_data["model"], by=request.user,
                               chat_models=form.cleaned_data["chat_models"])
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, _("The default model is saved."))
    return redirect("integrations:team_settings", team_id=team_id)


@login_required
@require_POST
def team_agent_handle(request: HttpRequest, team_id: int) -> HttpResponse:
    """Name the team's agent (``@<handle>``)."""
    team = team_membership(request, team_id, manage=True).team
    form = AgentHandleForm(request.POST)
    if form.is_valid():
        try:
            team_set_agent_handle(team=team, handle=form.cleaned_data["handle"],
                                  by=request.user)
        except ApplicationError as error:
            form.add_error("handle", error.message)
        else:
            messages.success(request, _("The agent handle is saved."))
            return redirect("integrations:team_settings", team_id=team_id)
    team.refresh_from_db(fields=["agent_handle"])  # the page shows what is stored
    return _settings_page(request, team, handle_form=form)


@login_required
@require_POST
def team_tools(request: HttpRequest, team_id: int) -> HttpResponse:
    """Set which tools wait for approval."""
    team = team_membership(request, team_id, manage=True).team
    form = ToolPolicyForm(request.POST, policy=team.tool_policy)
    if not form.is_valid():
        return _settings_page(request, team, tools_form=form)
    require, exempt = form.lists()
    try:
        team_set_tool_policy(team=team, require=require, exempt=exempt, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, _("The tool policy is saved."))
    return redirect("integrations:team_settings", team_id=team_id)


# -- MCP servers -------------------------------------------------------------------------------
@login_required
@require_POST
def mcp_server_add(request: HttpRequest, team_id: int) -> HttpResponse:
    """Add an HTTP MCP server to the team."""
    team = team_membership(request, team_id, manage=True).team
    form = McpHttpServerForm(request.POST)
    if form.is_valid():
        try:
            server = mcp_server_create_http(team=team, by=request.user, data=form.to_input())
        except ApplicationError as error:
            _form_refusal(request, form, error)
        else:
            messages.success(request, _("The MCP server %(name)s is added.")
                             % {"name": server.name})
            return redirect(_mcp_anchor(team_id))
    return _settings_page(request, team, mcp_form=form)


@login_required
@require_http_methods(["GET", "POST"])
def mcp_server_edit(request: HttpRequest, team_id: int, server_id: int) -> HttpResponse:
    """Change one of the team's HTTP MCP servers (header values stay write-only)."""
    team = team_membership(request, team_id, manage=True).team
    server = team_mcp_server(team, server_id)
    if server is None:
        raise Http404("No such MCP server.")
    if server.is_stdio:
        raise PermissionDenied(_("Site staff manage this server in the admin."))
    form = McpHttpServerForm(request.POST) if request.method == "POST" else None
    if form is not None and form.is_valid():
        try:
            mcp_server_update(team=team, server_id=server.pk, by=request.user,
                              data=form.to_input())
        except ApplicationError as error:
            _form_refusal(request, form, error)
        else:
            messages.success(request, _("The MCP server %(name)s is saved.")
                             % {"name": form.cleaned_data["name"]})
            return redirect(_mcp_anchor(team_id))
    context = {"team": team, "server": server, "form": form or McpHttpServerForm.of(server)}
    return render(request, "integrations/mcp_server_edit.html", context)


@login_required
@require_POST
def mcp_server_remove(request: HttpRequest, team_id: int, server_id: int) -> HttpResponse:
    """Delete one of the team's HTTP MCP servers."""
    team = team_membership(request, team_id, manage=True).team
    try:
        mcp_server_delete(team=team, server_id=server_id, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, _("The MCP server is deleted."))
    return redirect(_mcp_anchor(team_id))


@login_required
@require_POST
def mcp_server_check(request: HttpRequest, team_id: int, server_id: int) -> HttpResponse:
    """Test connection: connect to the server, list its tools, show them on the page."""
    team = team_membership(request, team_id, manage=True).team
    try:
        report = mcp_server_test(team=team, server_id=server_id, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
        return redirect(_mcp_anchor(team_id))
    return _settings_page(request, team, mcp_report=report)


@login_required
@require_POST
def mcp_catalog_on(request: HttpRequest, team_id: int, server_id: int) -> HttpResponse:
    """Enable a catalog MCP server for the team."""
    team = team_membership(request, team_id, manage=True).team
    try:
        enablement = mcp_catalog_enable(team=team, server_id=server_id, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, _("The MCP server %(name)s is enabled.")
                         % {"name": enablement.server.name})
    return redirect(_mcp_anchor(team_id))


@login_required
@require_POST
def mcp_catalog_off(request: HttpRequest, team_id: int, server_id: int) -> HttpResponse:
    """Disable a catalog MCP server for the team."""
    team = team_membership(request, team_id, manage=True).team
    try:
        mcp_catalog_disable(team=team, server_id=server_id, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, _("The MCP server is disabled for the team."))
    return redirect(_mcp_anchor(team_id))


# -- OAuth sign-in (apps.integrations.mcp_oauth) -----------------------------------------------
@login_required
@require_http_methods(["GET", "POST"])
def mcp_sign_in(request: HttpRequest, team_id: int, server_id: int) -> HttpResponse:
    """GET: the sign-in page of a server (signed in or not, a button); POST: start the sign-in
    and send the browser on to the server's authorization endpoint. Not with a redirect: our
    CSP's ``form-action 'self'`` covers the redirects a form submission follows, so the answer
    is a page that moves on by itself (a meta refresh, which CSP does not restrict) and a link."""
    team = team_membership(request, team_id).team
    try:
        server = sign_in_server(team, server_id, request.user)
        if request.method == "POST":
            authorization = sign_in_start(
                team=team, server_id=server.pk, by=request.user,
                session_key=_session_key(request), redirect_uri=_callback_uri(request))
            return render(request, "integrations/mcp_sign_in_redirect.html",
                          {"server": server, "authorization_url": authorization})
    except ApplicationError as error:
        refusal(request, error)
        return redirect("integrations:mcp_sign_in", team_id=team_id, server_id=server_id)
    context = {"team": team, "server": server,
               "connection": connection_for(server, team, request.user)}
    return render(request, "integrations/mcp_sign_in.html", context)


@login_required
@require_GET
def mcp_sign_ins(request: HttpRequest, team_id: int) -> HttpResponse:
    """A member's own sign-ins: the team's person-scoped servers, each with Sign in / Sign
    out (any member; another team's id is 404 like a missing one)."""
    membership = team_membership(request, team_id)
    context = {"team": membership.team, "uses_tools": membership.role_enum.can_write,
               "servers": personal_sign_ins(membership.team, request.user)}
    return render(request, "integrations/mcp_sign_ins.html", context)


@login_required
@require_POST
def mcp_sign_out(request: HttpRequest, team_id: int, server_id: int) -> HttpResponse:
    """Sign out: revoke at the server where it can, and forget the tokens."""
    team = team_membership(request, team_id).team
    try:
        ended = sign_out(team=team, server_id=server_id, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
        return redirect("integrations:mcp_sign_in", team_id=team_id, server_id=server_id)
    messages.success(request, _(_SIGNED_OUT[ended]))
    return redirect("integrations:mcp_sign_in", team_id=team_id, server_id=server_id)


_SIGNED_OUT = {
    SignOut.REVOKED: gettext_noop("Signed out."),
    SignOut.FORGOTTEN: gettext_noop(
        "Signed out here (the server did not confirm revoking the sign-in)."),
    SignOut.NOT_SIGNED_IN: gettext_noop("You are not signed in (already signed out)."),
}


@login_required
@require_GET
def mcp_oauth_callback(request: HttpRequest) -> HttpResponse:
    """Where the authorization server sends the browser back (the exact redirect URI)."""
    try:
        connection = sign_in_finish(user=request.user, session_key=_session_key(request),
                                    redirect_uri=_callback_uri(request),
                                    params=request.GET.dict())
    except ApplicationError as error:
        return render(request, "integrations/mcp_sign_in_failed.html",
                      {"message": error.message}, status=400)
    messages.success(request, _("Signed in to %(name)s.") % {"name": connection.server.name})
    return redirect("integrations:mcp_sign_in", team_id=connection.team_id,
                    server_id=connection.server_id)


def _session_key(request: HttpRequest) -> str:
    if request.session.session_key is None:
        request.session.save()
    return str(request.session.session_key)


def _callback_uri(request: HttpRequest) -> str:
    """The exact redirect URI (RFC 6749 3.1.2): on ``CONFAB["PUBLIC_URL"]`` when it is set, so
    neither the Host a person typed nor a TLS proxy's scheme changes it; else this request's
    origin (``make demo``)."""
    path = reverse("integrations:mcp_oauth_callback")
    public = settings.CONFAB["PUBLIC_URL"]
    return f"{public}{path}" if public else request.build_absolute_uri(path)


def _with_sign_ins(overview: McpOverview, team: Team, user: User) -> McpOverview:
    """Mark each server that needs a sign-in with the one this person sees (``sign_in_state``:
    the team's, or their own), for the settings page."""
    mark_sign_ins([*overview.own, *(choice.server for choice in overview.catalog)], team, user)
    return overview


def _form_refusal(request: HttpRequest, form: McpHttpServerForm,
                  error: ApplicationError) -> None:
    """404/403 for not_found/forbidden; any other refusal is shown on the form."""
    if error.code in (ErrorCode.NOT_FOUND, ErrorCode.FORBIDDEN):
        refusal(request, error)
    form.add_error(None, error.message)


def _mcp_anchor(team_id: int) -> str:
    return reverse("integrations:team_settings", args=[team_id]) + "#mcp-servers"


def _settings_page(
    request: HttpRequest, team: Team, *, model_form: DefaultModelForm | None = None,
    handle_form: AgentHandleForm | None = None, tools_form: ToolPolicyForm | None = None,
    mcp_form: McpHttpServerForm | None = None,
    mcp_report: McpProbeReport | None = None,
) -> HttpResponse:
    config = TeamAIConfig.objects.filter(team=team).first()
    initial = ({"model": config.default_model_id, "chat_models": list(config.chat_models.all())}
               if config else {})
    context = {
        "team": team,
        "model_form": model_form or DefaultModelForm(initial=initial),
        "handle_form": handle_form or AgentHandleForm(initial={"handle": team.agent_handle}),
        "tools_form": tools_form or ToolPolicyForm(policy=team.tool_policy),
        "mcp": _with_sign_ins(team_mcp_overview(team), team, request.user),  # type: ignore[arg-type]
        "mcp_form": mcp_form or McpHttpServerForm(),
        "mcp_report": mcp_report,
    }
    return render(request, "integrations/team_settings.html", context)
