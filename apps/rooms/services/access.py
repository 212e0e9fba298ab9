"""The one role check every writing service of a conversation shares."""

from __future__ import annotations

from django.utils.translation import gettext as _

from apps.accounts.models import Membership
from apps.common.errors import ApplicationError, ErrorCode

__all__ = ["require_writer"]


def require_writer(membership: Membership) -> None:
    """Viewers watch; they cannot send, stop, decide or answer (ApplicationError forbidden)."""
    if not membership.role_enum.can_write:
        raise ApplicationError(ErrorCode.FORBIDDEN, _("Viewers can watch but not take part."))
