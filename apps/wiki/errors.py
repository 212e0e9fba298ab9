"""The wiki store's refusals as :class:`~apps.common.errors.ApplicationError` (issue 9):

- WikiNotFound -> ``not_found`` (404);
- WikiInvalid -> ``invalid`` (400);
- WikiTooLarge -> ``too_large`` (413);
- WikiConflict -> :class:`WikiConflictError`, ``conflict`` (409) with the current page and the
  merged text;
- WikiUnavailable -> ``unavailable`` (503; git's own words go to the log, not to the caller).

A missing page, a missing or malformed revision and a missing attachment all answer the same
fixed ``No such page.`` / ``No such file.``: nothing of the request (a revision such as
``--output=Home.md``) is echoed back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.utils.translation import gettext as _

from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.engine.wiki import (
    CurrentPage,
    WikiConflict,
    WikiDamaged,
    WikiError,
    WikiInvalid,
    WikiNotFound,
    WikiTooLarge,
)

__all__ = ["WikiConflictError", "application_error", "store_errors"]

logger = logging.getLogger(__name__)


class WikiConflictError(ApplicationError):
    """A write that would lose someone's change (``conflict``, 409).

    ``current``: the page on ``main`` now (None when it is gone); ``merged_text``: the 3-way
    merge with git's conflict markers (None when there was nothing to merge, e.g. a create-only
    write of an existing page). :meth:`body` is ``{"code": "conflict", "message", "current":
    {"content", "blob"} | null, "merged_text": str | null}``.
    """

    def __init__(self, message: str, *, current: CurrentPage | None,
                 merged_text: str | None) -> None:
        super().__init__(ErrorCode.CONFLICT, message)
        self.current = current
        self.merged_text = merged_text

    def body(self) -> dict[str, Any]:
        current = self.current
        return {**super().body(),
                "current": None if current is None else {"content": current.content,
                                                         "blob": current.blob},
                "merged_text": self.merged_text}


def application_error(error: WikiError, *, what: str = "page") -> ApplicationError:
    """The ApplicationError a store refusal answers as (``what``: "page" or "file", for 404)."""
    if isinstance(error, WikiNotFound):
        return not_found(what)
    if isinstance(error, WikiConflict):
        return WikiConflictError(error.message, current=error.current,
                                 merged_text=error.merged_text)
    if isinstance(error, WikiInvalid):
        return ApplicationError(ErrorCode.INVALID, error.message)
    if isinstance(error, WikiTooLarge):
        return ApplicationError(ErrorCode.TOO_LARGE, error.message)
    if isinstance(error, WikiDamaged):  # logged by the store; a retry will not help
        return ApplicationError(ErrorCode.UNAVAILABLE, error.message)
    logger.warning("wiki store unavailable: %s", error.message)
    return ApplicationError(ErrorCode.UNAVAILABLE, _("The wiki is unavailable; try again."))


@contextmanager
def store_errors(*, what: str = "page") -> Iterator[None]:
    """Re-raise a WikiError from the block as its ApplicationError (``raise ... from``)."""
    try:
        yield
    except WikiError as error:
        raise application_error(error, what=what) from error
