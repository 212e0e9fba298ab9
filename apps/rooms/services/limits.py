"""What one person may send: how long a text may be (one setting, ``CONFAB_MESSAGE_MAX_CHARS``,
for messages and AskUser answers alike; the room's composer reads it from the page) and how
many a minute (``CONFAB_MESSAGES_PER_MINUTE``, for messages and the agent turns they ask for)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_lazy

from apps.common.errors import ApplicationError, ErrorCode

__all__ = ["grouped", "message_max_chars", "require_fits", "require_under_rate"]

# What each kind of row a person makes says when there are too many (``require_under_rate``).
_RATE_REFUSALS = {
    "messages": gettext_lazy("At most %(limit)d messages a minute; wait a moment."),
    "agent turns": gettext_lazy("At most %(limit)d agent turns a minute; wait a moment."),
}


def message_max_chars() -> int:
    """The longest text a person can send, in characters."""
    return int(settings.CONFAB["MESSAGE_MAX_CHARS"])


def require_fits(text: str) -> None:
    """Refuse ``text`` longer than :func:`message_max_chars` (ApplicationError ``too_large``,
    in words a person reads)."""
    limit = message_max_chars()
    if len(text) > limit:
        raise ApplicationError(ErrorCode.TOO_LARGE, gettext(
            "The message is %(length)s characters long; at most %(limit)s fit in one message. "
            "Shorten it or split it.") % {"length": grouped(len(text)), "limit": grouped(limit)})


def grouped(count: int) -> str:
    """``count`` with the active locale's thousands separator ("12,345")."""
    return number_format(count, force_grouping=True)


def require_under_rate(made: QuerySet, what: str) -> None:
    """Refuse (``rate_limited``) when ``made`` — one person's rows, with a ``created_at`` —
    holds ``CONFAB_MESSAGES_PER_MINUTE`` or more of the last minute; ``what`` names them
    ("messages", "agent turns") in the refusal."""
    limit = settings.CONFAB["MESSAGES_PER_MINUTE"]
    if made.filter(created_at__gte=timezone.now() - timedelta(minutes=1)).count() >= limit:
        raise ApplicationError(ErrorCode.RATE_LIMITED, _RATE_REFUSALS[what] % {"limit": limit})
