"""What the wiki store hands back: plain frozen dataclasses (no git objects escape the store)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["Author", "CommitInfo", "HistoryEntry", "Page", "PageInfo", "SearchHit", "WriteResult"]


@dataclass(frozen=True, slots=True)
class Author:
    """Who a commit is by: ``name`` and ``email`` as the host read them from its database, and
    the ``trailers`` that end the message (``{"Confab-User": "42", "Confab-Run": "..."}``).

    The store strips newlines, control characters and angle brackets from every field, so a name
    cannot forge a header or a trailer.
    """

    name: str
    email: str
    trailers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PageInfo:
    """One file of the wiki at ``main``: ``path`` in the repository (``.md`` included),
    ``title`` (the first ``# `` heading, else the file name without ``.md``), ``blob`` (40-hex id),
    ``size`` in bytes, and the last commit that changed it: ``updated_at`` (UTC),
    ``updated_by`` (its author's name), ``commit``."""

    path: str
    title: str
    blob: str
    size: int
    updated_at: datetime
    updated_by: str
    commit: str


@dataclass(frozen=True, slots=True)
class Page:
    """A page's text at a revision: ``content``, ``blob`` and the ``commit`` it was read at."""

    path: str
    content: str
    blob: str
    commit: str


@dataclass(frozen=True, slots=True)
class WriteResult:
    """A committed change: the page's new ``blob`` (None for a delete), the new ``commit`` on
    ``main``, and ``merged`` when someone else's change was merged in first. ``changed`` is
    False when the file already was so: no commit was made and ``commit`` is ``main`` as it is
    ("" for an empty wiki)."""

    path: str
    blob: str | None
    commit: str
    merged: bool = False
    changed: bool = True


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """A commit: id, author name and email, UTC time, subject and the ``Confab-*`` trailers."""

    commit: str
    author_name: str
    author_email: str
    date: datetime
    subject: str
    trailers: dict[str, str]


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """A commit that changed a page, and the ``path`` the page had in it (renames followed)."""

    path: str
    commit: CommitInfo


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A matching line: ``path``, 1-based ``line`` number and the line as ``snippet`` (capped)."""

    path: str
    line: int
    snippet: str
