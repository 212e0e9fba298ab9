"""The team a signed-in person is working in, kept in the session.

It is always one of the person's teams: a stored id that no longer names one (they left, were
removed, or the team is gone) falls back to their first team by name, and None means they have
no team at all. The room list and the top bar show this team.
"""

from __future__ import annotations

from django.http import HttpRequest

from apps.accounts.models import Membership, Team
from apps.accounts.selectors import membership_of
from apps.common.errors import not_found

__all__ = ["SESSION_KEY", "current_membership", "current_team", "team_switch"]

SESSION_KEY = "team_id"  # apps.rooms.views reads it too
_MEMO = "_confab_current_membership"  # request attribute: one lookup per request


def current_membership(request: HttpRequest) -> Membership | None:
    """The signed-in user's membership of their current team (team and user loaded), or None
    when signed out or in no team."""
    if not request.user.is_authenticated:
        return None
    if not hasattr(request, _MEMO):
        setattr(request, _MEMO, _resolve(request))
    return getattr(request, _MEMO)


def current_team(request: HttpRequest) -> Team | None:
    """The team of :func:`current_membership`, or None."""
    membership = current_membership(request)
    return membership.team if membership else None


def team_switch(request: HttpRequest, team_id: int) -> Membership:
    """Make ``team_id`` the current team; ``not_found`` unless the user is a member of it."""
    membership = membership_of(request.user, team_id)
    if membership is None:
        raise not_found("team")
    request.session[SESSION_KEY] = membership.team_id
    setattr(request, _MEMO, membership)
    return membership


def _resolve(request: HttpRequest) -> Membership | None:
    stored = request.session.get(SESSION_KEY)
    membership = membership_of(request.user, stored) if isinstance(stored, int) else None
    if membership is None:
        membership = (Membership.objects.filter(user=request.user)
                      .select_related("team", "user").order_by("team__name", "team_id").first())
        if membership is None:
            request.session.pop(SESSION_KEY, None)
        else:
            request.session[SESSION_KEY] = membership.team_id
    return membership
