"""History and search: the two reads that parse ``git log`` and ``git grep`` output."""

from __future__ import annotations

from datetime import UTC, datetime

from apps.engine.wiki.gitcmd import GitSession
from apps.engine.wiki.paths import ATTACHMENTS_DIR
from apps.engine.wiki.types import CommitInfo, HistoryEntry, SearchHit

__all__ = ["history_of", "search_pages"]

_SNIPPET_CHARS = 200
_LOG_FORMAT = "--format=%x1e%H%x1f%an%x1f%ae%x1f%at%x1f%s%x1f%(trailers:only,unfold)"


def history_of(session: GitSession, path: str, *, limit: int) -> list[HistoryEntry]:
    """The newest ``limit`` commits on ``main`` that changed ``path``, following renames
    (``git log --follow``), each with the name the file had in it."""
    out = session.out("log", "--follow", "-z", _LOG_FORMAT, "--name-only", f"-n{limit}",
                      "refs/heads/main", "--", path)
    entries = []
    for record in out.split(b"\x1e")[1:]:
        header, _, names = record.partition(b"\0")
        sha, name, email, stamp, subject, trailers = \
            header.decode("utf-8", "replace").split("\x1f")
        named = [n for n in names.lstrip(b"\n").split(b"\0") if n]
        entries.append(HistoryEntry(
            path=named[-1].decode("utf-8", "replace") if named else path,
            commit=CommitInfo(commit=sha, author_name=name, author_email=email,
                              date=datetime.fromtimestamp(int(stamp), UTC), subject=subject,
                              trailers=_trailers(trailers))))
    return entries


def _trailers(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            found[key] = value
    return found


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
