"""Teams: the home page, creating and switching teams, members and their roles, invitations.

Every team is found through the user's own memberships (``team_membership``): another team's
id answers 404 exactly like one that does not exist; a member without the role gets 403.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.current import current_membership, team_switch
from apps.accounts.forms import InvitationForm, RoleForm, TeamForm
from apps.accounts.models import Membership, Role, Team
from apps.accounts.pages import team_membership
from apps.accounts.selectors import team_members as members_of
from apps.accounts.selectors import team_open_invitations
from apps.accounts.services import (
    invitation_create,
    invitation_revoke,
    membership_remove,
    membership_set_role,
    team_create,
)
from apps.common.errors import ApplicationError
from apps.common.web import refusal

__all__ = ["home", "invitation_new", "invitation_revoke_view", "member_remove", "member_role",
           "team_members", "team_new", "team_switch_view"]


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The current team's rooms; a person without a team is asked to create one."""
    if current_membership(request) is None:
        return redirect("accounts:team_new")
    return redirect("rooms:room_list")


@login_required
@require_http_methods(["GET", "POST"])
def team_new(request: HttpRequest) -> HttpResponse:
    """Create a team (the creator is its owner) and work in it."""
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = team_create(name=form.cleaned_data["name"], owner=request.user)
        except ApplicationError as error:
            form.add_error("name", error.message)
        else:
            team_switch(request, team.pk)
            messages.success(request, _("%(team)s is ready. Invite people from Members.")
                             % {"team": team.name})
            return redirect("home")
    return render(request, "accounts/team_new.html", {"form": form})


@login_required
@require_POST
def team_switch_view(request: HttpRequest, team_id: int) -> HttpResponse:
    """Work in another of one's teams (404 for a team one is not in)."""
    try:
        team_switch(request, team_id)
    except ApplicationError as error:
        refusal(request, error)
    return redirect("home")


@login_required
@require_http_methods(["GET"])
def team_members(request: HttpRequest, team_id: int) -> HttpResponse:
    """The members and their roles; owners and admins also change roles and invite."""
    return _members_page(request, team_membership(request, team_id))


@login_required
@require_POST
def member_role(request: HttpRequest, team_id: int, user_id: int) -> HttpResponse:
    """Give a member another role (``membership_set_role`` decides who may)."""
    target = _target(team_membership(request, team_id).team, user_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose one of the roles."))
        return redirect("accounts:team_members", team_id=team_id)
    role = Role(form.cleaned_data["role"])
    try:
        membership_set_role(team=target.team, user=target.user, role=role, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, _("%(name)s is now %(role)s.")
                         % {"name": target.user.shown_name, "role": role.label.lower()})
    return redirect("accounts:team_members", team_id=team_id)


@login_required
@require_POST
def member_remove(request: HttpRequest, team_id: int, user_id: int) -> HttpResponse:
    """Remove a member, or leave the team when it is oneself."""
    target = _target(team_membership(request, team_id).team, user_id)
    try:
        membership_remove(team=target.team, user=target.user, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
        return redirect("accounts:team_members", team_id=team_id)
    if target.user_id == request.user.pk:
        messages.success(request, _("You left %(team)s.") % {"team": target.team.name})
        return redirect("home")
    messages.success(request, _("%(name)s is no longer in %(team)s.")
                     % {"name": target.user.shown_name, "team": target.team.name})
    return redirect("accounts:team_members", team_id=team_id)


@never_cache
@login_required
@require_POST
def invitation_new(request: HttpRequest, team_id: int) -> HttpResponse:
    """Create an invitation link and show it, this once (only its hash is kept)."""
    membership = team_membership(request, team_id, manage=True)
    form = InvitationForm(request.POST, roles=_roles_for(membership))
    if not form.is_valid():
        return _members_page(request, membership, invite_form=form)
    try:
        _invitation, raw = invitation_create(team=membership.team, role=form.cleaned_data["role"],
                                   email=form.cleaned_data["email"], by=request.user)
    except ApplicationError as error:
        refusal(request, error)
        return _members_page(request, membership, invite_form=form)
    link = request.build_absolute_uri(reverse("accounts:invitation", args=[raw]))
    return _members_page(request, membership, invite_link=link)


@login_required
@require_POST
def invitation_revoke_view(request: HttpRequest, team_id: int, invitation_id: int) -> HttpResponse:
    """Revoke an unused invitation of the team."""
    membership = team_membership(request, team_id)
    try:
        invitation_revoke(team=membership.team, invitation_id=invitation_id, by=request.user)
    except ApplicationError as error:
        refusal(request, error)
    else:
        messages.success(request, _("The invitation is revoked: its link no longer works."))
    return redirect("accounts:team_members", team_id=team_id)


def _target(team: Team, user_id: int) -> Membership:
    """The membership of ``user_id`` in ``team`` (one of the caller's teams), else 404."""
    target = members_of(team).filter(user__id=user_id).first()  # user__id: an id past 64
    # bits (from the URL) finds nobody, where the foreign key's lookup raised OverflowError
    if target is None:
        raise Http404("No such member.")
    return target


def _roles_for(membership: Membership) -> list[tuple[str, str]]:
    """The roles ``membership`` may hand out: all for an owner, all but owner for others."""
    owner = membership.role_enum == Role.OWNER
    return [(value, label) for value, label in Role.choices if owner or value != Role.OWNER]


def _members_page(
    request: HttpRequest, membership: Membership, *, invite_form: InvitationForm | None = None,
    invite_link: str | None = None,
) -> HttpResponse:
    """The members page as ``membership`` sees it, with a new link or a form's errors."""
    manager = membership.role_enum.can_manage
    owner = membership.role_enum == Role.OWNER
    rows = [{"membership": m, "editable": manager and (owner or m.role != Role.OWNER)}
            for m in members_of(membership.team)]
    context = {
        "team": membership.team, "membership": membership, "can_manage": manager,
        "rows": rows, "roles": _roles_for(membership), "invite_link": invite_link,
        "invitations": team_open_invitations(membership.team) if manager else (),
        "invite_form": invite_form or InvitationForm(roles=_roles_for(membership)),
    }
    return render(request, "accounts/team_members.html", context)
