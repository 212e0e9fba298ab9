"""Invitation links: ``/invite/<token>/`` shows the invitation; accepting it is a POST.

A link opened signed in asks for one click (a GET never joins a team: an image tag elsewhere
must not make someone a member of a stranger's team). Signed out, the page offers sign-up and
log-in forms that carry the token and accept it once the person is in.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from apps.accounts.current import team_switch
from apps.accounts.models import Invitation
from apps.accounts.selectors import invitation_by_token
from apps.accounts.services import invitation_accept
from apps.common.errors import ApplicationError

__all__ = ["accept_invitation", "invitation", "invitation_for"]


def invitation_for(token: str) -> Invitation | None:
    """The invitation a sign-up or log-in form carries, for the page to name its team."""
    return invitation_by_token(token) if token else None


def accept_invitation(request: HttpRequest, token: str) -> None:
    """Accept ``token`` for the signed-in user (nothing when empty) and make its team the
    current one; the outcome is a message on the next page."""
    if not token:
        return
    try:
        membership = invitation_accept(token=token, user=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
        return
    team_switch(request, membership.team_id)
    messages.success(request, _("You are in %(team)s as %(role)s.") % {
        "team": membership.team.name, "role": membership.role_enum.label.lower()})


@require_http_methods(["GET", "POST"])
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """GET: the invitation (its team and role) with the way in; POST: accept it."""
    found = invitation_by_token(token)
    if found is None:
        raise Http404("No such invitation.")
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        accept_invitation(request, token)
        return redirect("home")
    return render(request, "accounts/invitation.html", {"invitation": found, "token": token})
