"""How long a person's text may be: one setting, ``CONFAB_MESSAGE_MAX_CHARS``, for messages and
AskUser answers alike (the room's composer reads the same setting from the page)."""

from __future__ import annotations

from django.conf import settings

from apps.common.errors import ApplicationError, ErrorCode

__all__ = ["message_max_chars", "require_fits"]


def message_max_chars() -> int:
    """The longest text a person can send, in characters."""
    return int(settings.CONFAB["MESSAGE_MAX_CHARS"])


def require_fits(text: str) -> None:
    """Refuse ``text`` longer than :func:`message_max_chars` (ApplicationError ``too_large``,
    in words a person reads)."""
    limit = message_max_chars()
    if len(text) > limit:
        raise ApplicationError(ErrorCode.TOO_LARGE,
                               f"The message is {len(text):,} characters long; at most "
                               f"{limit:,} fit in one message. Shorten it or split it.")
