"""Three-way merge of page text with ``git merge-file`` (the diff3 algorithm git merges with).

``merge-file`` reads files, so base, current and the writer's text go to a private temporary
directory; the labels in the conflict markers say whose side is whose.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from apps.engine.wiki.gitcmd import GitSession

__all__ = ["merge_text"]

_MAX_CONFLICTS = 127  # merge-file's status counts conflicts up to this; above is an error


def merge_text(session: GitSession, *, base: str, current: str, mine: str) -> tuple[str, bool]:
    """Merge the change base → ``mine`` into ``current``: ``(text, clean)``. When not clean the
    text holds conflict markers ``<<<<<<< yours`` / ``=======`` / ``>>>>>>> current``."""
    with tempfile.TemporaryDirectory(prefix="confab-merge-") as folder:
        files = []
        for name, text in (("yours", mine), ("base", base), ("current", current)):
            path = Path(folder) / name
            path.write_text(text, encoding="utf-8", newline="")
            files.append(str(path))
        status, out = session.run(
            "merge-file", "-p", "-L", "yours", "-L", "base", "-L", "current", "--", *files,
            ok=tuple(range(_MAX_CONFLICTS + 1)))
    return out.decode("utf-8", "replace"), status == 0
