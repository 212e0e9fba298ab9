"""History: the read that parses ``git log`` output."""

from __future__ import annotations

from datetime import UTC, datetime

from apps.engine.wiki.gitcmd import GitSession
from apps.engine.wiki.types import CommitInfo, HistoryEntry

__all__ = ["history_of"]

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
