"""Search: the lines of the pages at ``main`` that contain a literal query, ignoring case.

A wiki whose pages fit :attr:`WikiLimits.search_memory_bytes` is searched in memory from the
texts kept by blob id (``texts.py``): only pages changed since the last read come from git, and
case is folded by Unicode rules (``str.casefold``: "STRASSE" finds "Straße"). At 10,000 pages
that is ~30 ms where ``git grep`` inflates every blob again (~200 ms). Larger wikis are searched
by ``git grep -F -i`` (ASCII case folding under ``LC_ALL=C``). Hits come in path order either way.
"""

from __future__ import annotations

from collections.abc import Mapping

from apps.engine.wiki.gitcmd import GitSession
from apps.engine.wiki.paths import ATTACHMENTS_DIR
from apps.engine.wiki.types import PageInfo, SearchHit

__all__ = ["search_kept", "search_pages"]

_SNIPPET_CHARS = 200


def search_kept(pages: Mapping[str, PageInfo], texts: Mapping[str, str], query: str, *,
                limit: int) -> list[SearchHit]:
    """Up to ``limit`` lines of ``pages`` (path order) containing ``query``, from ``texts``
    (``blob id -> text``, one for each page's blob)."""
    needle = query.casefold()
    hits: list[SearchHit] = []
    for path, info in pages.items():
        text = texts[info.blob]
        if needle not in text.casefold():
            continue
        for number, line in enumerate(text.split("\n"), start=1):
            if needle in line.casefold():
                hits.append(SearchHit(path=path, line=number, snippet=_snippet(line, query)))
                if len(hits) == limit:
                    return hits
    return hits


def search_pages(session: GitSession, head: str, query: str, *, limit: int) -> list[SearchHit]:
    """Up to ``limit`` lines of pages at ``head`` containing ``query`` (literal, any case).

    The query reaches git only as the value of ``-e``, so ``--output=x`` or ``-p`` is text to
    find (``shared/WIKI.md`` 1, checked against git 2.39)."""
    status, out = session.run(
        "grep", "-z", "-n", "-I", "-F", "-i", "--no-color", f"--max-count={limit}",
        "-e", query, head, "--", "*.md", f":(exclude){ATTACHMENTS_DIR}/",
        env={"GIT_LITERAL_PATHSPECS": "0"}, ok=(0, 1))  # our own two patterns, no user text
    hits: list[SearchHit] = []
    prefix = f"{head}:".encode()
    for line in out.split(b"\n"):
        parts = line.split(b"\0", 2)
        if status != 0 or len(parts) != 3 or not parts[0].startswith(prefix):
            continue
        text = parts[2].decode("utf-8", "replace")
        hits.append(SearchHit(path=parts[0][len(prefix):].decode("utf-8", "replace"),
                              line=int(parts[1]), snippet=_snippet(text, query)))
        if len(hits) == limit:
            break
    return hits


def _snippet(line: str, query: str) -> str:
    """At most 200 characters of ``line`` around the first match."""
    if len(line) <= _SNIPPET_CHARS:
        return line
    at = max(0, line.casefold().find(query.casefold()))
    start = max(0, min(at - _SNIPPET_CHARS // 3, len(line) - _SNIPPET_CHARS))
    return line[start:start + _SNIPPET_CHARS]
