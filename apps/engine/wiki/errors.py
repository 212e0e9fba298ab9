"""The wiki store's errors: one root under :class:`~apps.engine.errors.EngineError`.

Each carries what its caller needs to answer: the REST layer maps them onto ``404``, ``400``,
``413``, ``409`` and ``503``; the agent's tools turn them into an error result the model can act on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from apps.engine.errors import EngineError

__all__ = [
    "CurrentPage",
    "WikiConflict",
    "WikiDamaged",
    "WikiError",
    "WikiInvalid",
    "WikiNotFound",
    "WikiTooLarge",
    "WikiUnavailable",
]


class WikiError(EngineError):
    """Root of the wiki store's refusals; ``message`` is meant for people and models."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class WikiNotFound(WikiError):
    """No such page, revision or attachment (also every malformed revision: DESIGN 4)."""


class WikiInvalid(WikiError):
    """A path, content, message or argument the rules refuse; nothing was committed."""


class WikiTooLarge(WikiError):
    """Over a size limit (page, attachment, files per commit) or the team's quota."""


class WikiUnavailable(WikiError):
    """git failed, timed out, or the repository stayed locked; worth a retry later."""


class WikiDamaged(WikiUnavailable):
    """The repository is gone or an object in it cannot be read: no retry helps, an operator
    must restore it from a backup. Logged at ERROR when raised, naming the repository."""

    def __init__(self, git_dir: Path, detail: str) -> None:
        super().__init__("The wiki's repository is damaged; an administrator must restore it "
                         "from a backup. Nothing was changed.")
        logging.getLogger(__name__).error("wiki repository %s is damaged: %s", git_dir, detail)


@dataclass(frozen=True, slots=True)
class CurrentPage:
    """A page as it is on ``main`` now: its text and blob id."""

    content: str
    blob: str


class WikiConflict(WikiError):
    """A write that cannot be applied without losing someone's change.

    ``current``: the page on ``main`` now (None when it was deleted meanwhile);
    ``merged_text``: the 3-way merge of base, current and the writer's text with git's conflict
    markers (None when there was nothing to merge: a create-only write of an existing page, an
    unknown expected blob, a deleted page).
    """

    def __init__(self, message: str, *, current: CurrentPage | None,
                 merged_text: str | None = None) -> None:
        super().__init__(message)
        self.current = current
        self.merged_text = merged_text
