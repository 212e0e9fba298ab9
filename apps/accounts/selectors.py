"""Reads about people and teams; every lookup goes through the team the user belongs to."""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils import timezone

from apps.accounts.models import ApiToken, Invitation, Membership, Role, Team, User, hash_secret


def membership_of(user: User, team_id: int) -> Membership | None:
    """The user's membership of team ``team_id``, or None (also for anonymous users)."""
    if not user.is_authenticated:
        return None
    # team__id, not team_id: the team's own id field finds nothing for an id no row can
    # hold (past 64 bits: a client's input); the foreign key's lookup raised OverflowError
    return Membership.objects.filter(user=user, team__id=team_id).select_related(
        "team", "user").first()


async def amembership_of(user: User, team_id: int) -> Membership | None:
    """Async form of :func:`membership_of`."""
    if not user.is_authenticated:
        return None
    return await Membership.objects.filter(user=user, team__id=team_id).select_related(
        "team", "user").afirst()  # team__id: see membership_of


def role_of(user: User, team_id: int) -> Role | None:
    """The user's role in the team, or None when not a member."""
    membership = membership_of(user, team_id)
    return membership.role_enum if membership else None


def teams_of(user: User) -> QuerySet[Team]:
    """The teams the user belongs to."""
    return Team.objects.filter(memberships__user=user).order_by("name")


def team_members(team: Team) -> QuerySet[Membership]:
    """The team's memberships with their users, by name."""
    return team.memberships.select_related("user").order_by("user__display_name",
                                                              "user__username")


def team_open_invitations(team: Team) -> QuerySet[Invitation]:
    """The team's invitations still usable (not accepted, revoked or expired), newest first."""
    return team.invitations.filter(accepted_at__isnull=True, revoked=False,
                                   expires_at__gt=timezone.now()).order_by("-created_at")


def invitation_by_token(raw: str) -> Invitation | None:
    """The invitation whose link carries ``raw`` (any state; team loaded), or None."""
    return Invitation.objects.select_related("team").filter(token_hash=hash_secret(raw)).first()


def tokens_of(user: User) -> QuerySet[ApiToken]:
    """The user's API tokens, newest first (revoked ones too)."""
    return user.api_tokens.order_by("-created_at")
