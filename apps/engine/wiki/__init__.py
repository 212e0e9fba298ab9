"""A team's wiki: one bare git repository, written through plumbing with compare-and-swap on
``main`` and a 3-way merge when someone else wrote first (DESIGN 3.7, 4; ``shared/WIKI.md``).

No Django here: the host gives a :class:`WikiStore` the repository's path (derived from the
team's database id) and an :class:`Author` read from its database. Every method is synchronous
and may block on git for up to its timeout: async callers use ``asyncio.to_thread``.
"""

from apps.engine.wiki.errors import (
    CurrentPage,
    WikiConflict,
    WikiDamaged,
    WikiError,
    WikiInvalid,
    WikiNotFound,
    WikiTooLarge,
    WikiUnavailable,
)
from apps.engine.wiki.limits import WikiLimits
from apps.engine.wiki.paths import is_attachment, is_page
from apps.engine.wiki.store import WikiRecord, WikiStore
from apps.engine.wiki.types import (
    Author,
    CommitInfo,
    HistoryEntry,
    Page,
    PageInfo,
    SearchHit,
    WriteResult,
)

__all__ = [
    "Author",
    "CommitInfo",
    "CurrentPage",
    "HistoryEntry",
    "Page",
    "PageInfo",
    "SearchHit",
    "WikiConflict",
    "WikiDamaged",
    "WikiError",
    "WikiInvalid",
    "WikiLimits",
    "WikiNotFound",
    "WikiRecord",
    "WikiStore",
    "WikiTooLarge",
    "WikiUnavailable",
    "WriteResult",
    "is_attachment",
    "is_page",
]
