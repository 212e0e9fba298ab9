"""The wiki's limits (issue 9): every one refused with a clear error and no commit."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ATTACHMENT_EXTENSIONS", "WikiLimits"]

# Served back to browsers, so nothing a browser would run: no SVG, no HTML.
ATTACHMENT_EXTENSIONS = frozenset({
    "png", "jpg", "jpeg", "gif", "webp", "pdf", "txt", "csv", "json", "zip", "gz",
    "docx", "xlsx", "pptx", "odt", "ods", "mp3", "mp4", "webm",
})


@dataclass(frozen=True, slots=True)
class WikiLimits:
    """Sizes in bytes, time in seconds.

    ``page_bytes``: one page's UTF-8 text; ``attachment_bytes``: one file under ``_files/``;
    ``quota_bytes``: every file at ``main`` together; ``files_per_commit``: paths one commit
    may change; ``search_hits``: results of one search; ``git_timeout_s``: one git process;
    ``lock_timeout_s``: how long a writer waits for another on the same host;
    ``search_memory_bytes``: the most page text searched in memory, beyond which ``git grep``
    searches (keep it under ``texts.CACHE_BYTES``, which every wiki of the process shares).
    """

    page_bytes: int = 512 * 1024
    attachment_bytes: int = 10 * 1024 * 1024
    quota_bytes: int = 512 * 1024 * 1024
    files_per_commit: int = 50
    search_hits: int = 100
    git_timeout_s: float = 10.0
    lock_timeout_s: float = 5.0
    search_memory_bytes: int = 32 * 1024 * 1024
    attachment_extensions: frozenset[str] = ATTACHMENT_EXTENSIONS
