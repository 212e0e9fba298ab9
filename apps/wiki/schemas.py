"""What the wiki's REST API reads and writes (issue 9): request bodies, pages, results, errors.

Output schemas read the store's frozen dataclasses (:mod:`apps.engine.wiki.types`) by
attribute. Paths are repository paths with ``.md`` (``Home.md``, ``ops/Runbook.md``); blobs and
commits are 40-hex git ids; revisions are a commit id or ``HEAD``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from ninja import Field, Schema
from pydantic import AfterValidator

from apps.common.input_schema import InputSchema
from apps.engine.wiki import HistoryEntry
from apps.wiki.converters import nfc

__all__ = [
    "MESSAGE_MAX",
    "READ_ERRORS",
    "WRITE_ERRORS",
    "ConflictOut",
    "DiffOut",
    "HistoryEntryOut",
    "PageInfoOut",
    "PageOut",
    "PageRenameIn",
    "PageRestoreIn",
    "PageSaveIn",
    "SearchHitOut",
    "WikiErrorOut",
    "WriteOut",
]

MESSAGE_MAX = 200
"""The longest commit message a request may give: the store keeps a commit's subject to 200
characters, so a longer one would be cut without a word."""

READ_ERRORS = frozenset({400, 401, 404, 503})
"""Statuses a wiki read can refuse with (as :class:`WikiErrorOut`)."""

WRITE_ERRORS = frozenset({400, 401, 403, 404, 413, 503})
"""Statuses a wiki write can refuse with as :class:`WikiErrorOut` (409 is
:class:`ConflictOut`)."""


class WikiErrorOut(Schema):
    """A refusal: ``code`` (not_authenticated, not_found, forbidden, invalid, too_large,
    unavailable) and a human ``message``."""

    code: str
    message: str


class CurrentPageOut(Schema):
    """The page on ``main`` now."""

    content: str
    blob: str


class ConflictOut(Schema):
    """A write that would lose someone's change. ``current``: the page now (null when it is
    gone); ``merged_text``: the 3-way merge with git's conflict markers, to resolve and save
    again with ``current.blob`` as ``expected_blob`` (null when there was nothing to merge:
    a create-only write of an existing page)."""

    code: Literal["conflict"]
    message: str
    current: CurrentPageOut | None
    merged_text: str | None


class PageInfoOut(Schema):
    """A page at ``main``: ``title`` is its first ``# `` heading (else its file name);
    ``updated_at``/``updated_by``: the last commit that changed it."""

    path: str
    title: str
    blob: str
    updated_at: datetime
    updated_by: str


class PageOut(Schema):
    """A page's text at a revision, the blob to send back as ``expected_blob``, and the commit
    it was read at."""

    path: str
    content: str
    blob: str
    commit: str


class PageSaveIn(InputSchema):
    """``expected_blob``: null (or left out) creates the page and refuses with 409 when it
    exists; else the blob you read (a change made since is merged, or refused with 409).
    ``message``: the commit message ("" for a default). The author is always you."""

    content: str
    expected_blob: str | None = None
    message: str = Field("", max_length=MESSAGE_MAX)


class PageRenameIn(InputSchema):
    """``to``: normalized to NFC (a name from macOS arrives decomposed)."""

    to: Annotated[str, AfterValidator(nfc)] = Field(description="The new path, with .md.")
    expected_blob: str
    message: str = Field("", max_length=MESSAGE_MAX)


class PageRestoreIn(InputSchema):
    rev: str = Field(description="The commit (40 hex digits) whose version comes back.")
    message: str = Field("", max_length=MESSAGE_MAX)


class WriteOut(Schema):
    """A committed change: the page's ``path`` (the new one after a rename), its new ``blob``
    (null after a delete), the new ``commit`` on main, and ``merged``: someone else's change
    was merged in first. ``changed`` is false when the page already was so: no commit was made
    and ``commit`` is main as it is."""

    path: str
    blob: str | None
    commit: str
    merged: bool
    changed: bool


class HistoryEntryOut(Schema):
    """A commit that changed the page; ``path``: the page's path in it (renames followed);
    ``trailers``: its ``Confab-*`` trailers (user, and for the agent conversation, run, tool
    call)."""

    commit: str
    path: str
    author: str
    date: datetime
    subject: str
    trailers: dict[str, str]

    @staticmethod
    def resolve_commit(obj: HistoryEntry) -> str:
        return obj.commit.commit

    @staticmethod
    def resolve_author(obj: HistoryEntry) -> str:
        return obj.commit.author_name

    @staticmethod
    def resolve_date(obj: HistoryEntry) -> datetime:
        return obj.commit.date

    @staticmethod
    def resolve_subject(obj: HistoryEntry) -> str:
        return obj.commit.subject

    @staticmethod
    def resolve_trailers(obj: HistoryEntry) -> dict[str, str]:
        return obj.commit.trailers


class DiffOut(Schema):
    """The unified diff of ``path`` between two revisions ("" when they are equal)."""

    path: str
    from_rev: str = Field(alias="from")
    to_rev: str = Field(alias="to")
    diff: str


class SearchHitOut(Schema):
    """A line containing the query: 1-based ``line`` number, the line as ``snippet``."""

    path: str
    line: int
    snippet: str
