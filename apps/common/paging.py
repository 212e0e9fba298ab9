"""The bound every paged list shares (the REST lists and search, the search page)."""

from __future__ import annotations

__all__ = ["OFFSET_MAX"]

OFFSET_MAX = 1_000_000_000
"""The furthest a page may start (items skipped): far past any list confab holds, and well
inside the 64-bit integer SQLite and PostgreSQL take for ``OFFSET`` (a larger one was a 500:
SQLite's "datatype mismatch"). The REST API refuses a larger ``offset`` (``invalid``); the
search page shows its last page instead."""
