"""How one commit lands on ``main``: blobs, trees, a commit, compare-and-swap.

No index is used: the new trees are built from the old ones (``trees.py``), so writers never meet
on ``index.lock`` and never call gitpython's ``index.add``, which changes the whole process's
working directory. A writer killed at any
step leaves at most unreachable objects: ``main`` is the old commit or the new one, never a
broken one, because ``update-ref`` is the single step that publishes.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from apps.engine.wiki.catalog import FileChange
from apps.engine.wiki.commits import commit_message, ident_env
from apps.engine.wiki.errors import WikiUnavailable
from apps.engine.wiki.gitcmd import ZERO_OID, GitSession
from apps.engine.wiki.trees import write_tree
from apps.engine.wiki.types import Author

__all__ = ["make_commit", "move_main", "store_blobs", "writer_lock"]

@contextmanager
def writer_lock(git_dir: Path, timeout_s: float) -> Iterator[None]:
    """Serialize this host's writers of one wiki (``flock`` on ``<repo>.flock``), so they do
    not all merge and retry. Correctness never depends on it: ``update-ref`` does that."""
    path = git_dir.with_name(git_dir.name + ".flock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WikiUnavailable("The wiki is busy; try again.") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def store_blobs(session: GitSession, changes: Sequence[FileChange]) -> dict[str, str]:
    """Write the data of ``changes`` as blobs: ``path -> blob id`` (removals absent).

    ``--no-filters``: the bytes are stored as given, whatever attributes the tree names."""
    stored = [change for change in changes if change.data is not None]
    if not stored:
        return {}
    if len(stored) == 1:
        out = session.out("hash-object", "-w", "--no-filters", "--stdin", stdin=stored[0].data)
        return {stored[0].path: out.decode().strip()}
    with tempfile.TemporaryDirectory(prefix="confab-blobs-") as folder:
        names = []
        for number, change in enumerate(stored):
            name = os.path.join(folder, str(number))
            with open(name, "wb") as handle:
                handle.write(change.data)
            names.append(name)
        out = session.out("hash-object", "-w", "--no-filters", "--stdin-paths",
                          stdin="".join(f"{name}\n" for name in names).encode())
    return dict(zip((c.path for c in stored), out.decode().split(), strict=True))


def make_commit(session: GitSession, *, head: str | None, changes: Sequence[FileChange],
                blobs: dict[str, str], message: str, trailers: dict[str, str],
                author: Author, when: datetime) -> str:
    """A commit on top of ``head`` with ``changes`` applied (not yet on ``main``)."""
    tree = write_tree(session, head, changes, blobs)
    parents = ["-p", head] if head else []
    out = session.out("commit-tree", tree, *parents,
                      stdin=commit_message(message, {**author.trailers, **trailers}),
                      env=ident_env(author, when))
    return out.decode().strip()


def move_main(session: GitSession, *, new: str, old: str | None) -> bool:
    """Point ``main`` at ``new`` if it still points at ``old`` (None: does not exist yet).
    False when another writer moved it first."""
    status, _ = session.run("update-ref", "refs/heads/main", new, old or ZERO_OID,
                            ok=(0, 1, 128))
    return status == 0
