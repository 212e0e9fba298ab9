"""Who may act on a team: the checks every service starts with.

A person who is not a member gets the same answer as for a team that does not exist
(``not_found``, DESIGN 3.1); a member without the right role gets ``forbidden``.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from apps.accounts.models import Membership, Role, Team, User
from apps.common.errors import ApplicationError, ErrorCode, not_found

__all__ = ["require_manager", "require_member", "require_owner_for"]


def require_member(user: User, team: Team) -> Membership:
    """``user``'s membership of ``team``; ``not_found("team")`` when there is none."""
    if not user.is_authenticated:
        raise not_found("team")
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None:
        raise not_found("team")
    return membership


def require_manager(user: User, team: Team) -> Membership:
    """``user``'s membership when it may manage the team (owner, admin); else ``forbidden``
    (``not_found`` for a non-member)."""
    membership = require_member(user, team)
    if not membership.role_enum.can_manage:
        raise ApplicationError(ErrorCode.FORBIDDEN, _("Only owners and admins manage the team."))
    return membership


def require_owner_for(actor: Membership, *roles: Role) -> None:
    """Refuse unless ``actor`` is an owner when any of ``roles`` is the owner role: only an
    owner makes, unmakes or removes owners (an admin cannot promote anyone above itself)."""
    if Role.OWNER in roles and actor.role_enum != Role.OWNER:
        raise ApplicationError(ErrorCode.FORBIDDEN, _("Only an owner can grant or change owners."))
