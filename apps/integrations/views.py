"""The team settings page: default model, tool policy, and (with the MCP issue) MCP servers.

Owners and admins only: another team's id answers 404 exactly like a missing one, a member
without the role 403 (``team_membership``). Each form posts to its own URL and calls one
service.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.models import Team
from apps.accounts.pages import team_membership
from apps.common.errors import ApplicationError
from apps.common.web import refusal
from apps.integrations.forms import DefaultModelForm, ToolPolicyForm
from apps.integrations.models import TeamAIConfig
from apps.integrations.services import team_set_default_model, team_set_tool_policy

__all__ = ["team_model", "team_settings", "team_tools"]


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
        team_set_default_model(team=team, model=form.cleaned_data["model"], by=request.user)
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, "The default model is saved.")
    return redirect("integrations:team_settings", team_id=team_id)


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
        messages.success(request, "The tool policy is saved.")
    return redirect("integrations:team_settings", team_id=team_id)


def _settings_page(
    request: HttpRequest, team: Team, *, model_form: DefaultModelForm | None = None,
    tools_form: ToolPolicyForm | None = None,
) -> HttpResponse:
    chosen = TeamAIConfig.objects.filter(team=team).values_list("default_model", flat=True)
    context = {
        "team": team,
        "model_form": model_form or DefaultModelForm(initial={"model": chosen.first()}),
        "tools_form": tools_form or ToolPolicyForm(policy=team.tool_policy),
    }
    return render(request, "integrations/team_settings.html", context)
