"""The lookup every team page starts with: through the user's own memberships."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.utils.translation import gettext as _

from apps.accounts.models import Membership
from apps.accounts.selectors import membership_of

__all__ = ["team_membership"]


def team_membership(request: HttpRequest, team_id: int, *, manage: bool = False) -> Membership:
    """The user's membership of team ``team_id`` (team loaded). ``Http404`` when they are not
    a member, exactly as for a team that does not exist; with ``manage``, ``PermissionDenied``
    (403) for a member who is not an owner or admin."""
    membership = membership_of(request.user, team_id)
    if membership is None:
        raise Http404("No such team.")
    if manage and not membership.role_enum.can_manage:
        raise PermissionDenied(_("Only owners and admins manage the team."))
    return membership
