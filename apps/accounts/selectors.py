"""Reads about people and teams; every lookup goes through the team the user belongs to."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.accounts.models import Membership, Role, Team, User


def membership_of(user: User, team_id: int) -> Membership | None:
    """The user's membership of team ``team_id``, or None (also for anonymous users)."""
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, team_id=team_id).select_related(
        "team", "user").first()


async def amembership_of(user: User, team_id: int) -> Membership | None:
    """Async form of :func:`membership_of`."""
    if not user.is_authenticated:
        return None
    return await Membership.objects.filter(user=user, team_id=team_id).select_related(
        "team", "user").afirst()


def role_of(user: User, team_id: int) -> Role | None:
    """The user's role in the team, or None when not a member."""
    membership = membership_of(user, team_id)
    return membership.role_enum if membership else None


def teams_of(user: User) -> QuerySet[Team]:
    """The teams the user belongs to."""
    return Team.objects.filter(memberships__user=user).order_by("name")
