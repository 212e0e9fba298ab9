"""Text a client may send that PostgreSQL can store.

PostgreSQL's ``text`` and ``jsonb`` cannot hold U+0000 (https://www.postgresql.org/docs/current/
datatype-character.html: "the character with code zero cannot be stored"; jsonb rejects the
``\\u0000`` escape). A NUL in a frame's string used to reach the database and fail there, which
closed the socket with 1011 instead of refusing the frame (found by the chaos suite's frame
fuzz, tests/chaos/test_client_frames.py). (A lone surrogate, valid JSON but not Unicode text,
pydantic's ``str`` already refuses.)
"""

from __future__ import annotations

from django.utils.translation import gettext

__all__ = ["storable_text"]


def storable_text(value: object) -> object:
    """``value`` unchanged; a string holding NUL raises ValueError (which pydantic reports as
    that field's validation error, so the frame is refused with ``bad_frame``)."""
    if isinstance(value, str) and "\x00" in value:
        raise ValueError(gettext("contains a NUL character, which cannot be stored"))
    return value
