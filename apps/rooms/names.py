"""The rules for a conversation's title and a room's name, wherever one comes from: a REST
body, the socket's ``rename``, a page's form, the automatic title (docs/protocol.md, ``rename``).

A name is one line: every run of whitespace (spaces, tabs, line breaks, ideographic spaces) is
one space, control characters are dropped, and the ends are trimmed; then it must be
1-``max_length`` characters and show something: at least one letter, digit, punctuation mark
or symbol, so a name of only zero-width or other invisible characters is refused like an empty
one (it would show as a blank row in the sidebar).
"""

from __future__ import annotations

import unicodedata

from django.utils.translation import gettext as _

from apps.common.errors import ApplicationError, ErrorCode
from apps.rooms.models import Conversation, Room

__all__ = ["CONVERSATION_TITLE_MAX", "ROOM_NAME_MAX", "conversation_title", "one_line",
           "room_name"]

ROOM_NAME_MAX: int = Room._meta.get_field("name").max_length
CONVERSATION_TITLE_MAX: int = Conversation._meta.get_field("title").max_length

_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and symbols that draw nothing (Hangul fillers, the blank Braille pattern)."""


def _visible(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNPS" and char not in _BLANK_LETTERS


def one_line(value: str, *, field: str, max_length: int) -> str:
    """``value`` as one trimmed line (see the module doc). ApplicationError ``invalid`` when
    nothing visible is left (``field`` names it: "title") or it is longer than ``max_length``
    characters."""
    kept = "".join(char for char in value
                   if char.isspace() or unicodedata.category(char) != "Cc")
    text = " ".join(kept.split())
    if not any(_visible(char) for char in text):
        raise ApplicationError(ErrorCode.INVALID, _("The %(field)s cannot be empty.")
                               % {"field": field})
    if len(text) > max_length:
        raise ApplicationError(ErrorCode.INVALID,
                               _("The %(field)s is longer than %(most)d characters.")
                               % {"field": field, "most": max_length})
    return text


def conversation_title(value: str) -> str:
    """A conversation's title by :func:`one_line`, at most :data:`CONVERSATION_TITLE_MAX`."""
    return one_line(value, field=_("title"), max_length=CONVERSATION_TITLE_MAX)


def room_name(value: str) -> str:
    """A room's name by :func:`one_line`, at most :data:`ROOM_NAME_MAX`."""
    return one_line(value, field=_("room name"), max_length=ROOM_NAME_MAX)
