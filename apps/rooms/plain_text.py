"""A message's words as one plain string: what search reads (:mod:`apps.rooms.search`).

``Message.content`` is JSON, and SQLite stores non-ASCII text in a JSON column as ``\\uXXXX``
escapes, so a LIKE over it cannot find Chinese; this text goes in a column of its own
(``Message.search_text``), written wherever a message's content is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["plain_text"]


def plain_text(content: Iterable[dict[str, Any]] | str | None) -> str:
    """The ``text`` blocks of ``content`` (the engine's content blocks), joined by blank
    lines; a plain string as it is. Tool calls, results, images and thinking are left out:
    search finds what people and the agent said."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n\n".join(block["text"] for block in content
                       if block.get("type") == "text" and isinstance(block.get("text"), str))
