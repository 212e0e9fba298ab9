"""Text a client may send that PostgreSQL can store, for every interface (socket frames, REST).

PostgreSQL's ``text`` and ``jsonb`` cannot hold U+0000 (https://www.postgresql.org/docs/current/
datatype-character.html: "the character with code zero cannot be stored"; jsonb rejects the
``\\u0000`` escape). A NUL in a frame's string used to reach the database and fail there, which
closed the socket with 1011 instead of refusing the frame (found by the chaos suite's frame
fuzz, tests/chaos/test_client_frames.py); in a REST body it was a 500 on PostgreSQL and stored
as is on SQLite. (A lone surrogate, valid JSON but not Unicode text, pydantic's ``str`` already
refuses.)
"""

from __future__ import annotations

from typing import Annotated

from django.utils.translation import gettext
from pydantic import AfterValidator

__all__ = ["StorableText", "storable_text"]


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(_holds_nul(item) for item in value)
    return False


def storable_text(value: object) -> object:
    """``value`` unchanged; a string holding NUL, or a list or dict holding one at any depth
    (keys too), raises ValueError in the active language (which pydantic reports as that
    field's validation error: ``bad_frame`` on a socket, ``invalid`` in REST)."""
    if _holds_nul(value):
        raise ValueError(gettext("contains a NUL character, which cannot be stored"))
    return value


StorableText = Annotated[str, AfterValidator(storable_text)]
"""A string field or parameter that refuses NUL (:func:`storable_text`)."""
