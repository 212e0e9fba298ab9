"""Read-only snapshots of ``main``: one directory per commit, shared by every run that needs it.

The files are written by us from ``ls-tree`` and ``cat-file`` output, never by a git checkout,
so no filter, attribute or hook the repository could name ever runs. A snapshot is built in a
private directory and renamed into place, so a reader sees all of it or nothing, and two
builders race harmlessly. Old snapshots are removed once newer ones exist and nobody could
still be starting from them (DESIGN 3.7).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from apps.engine.wiki.gitcmd import GitSession

__all__ = ["snapshot_at"]

_KEEP = 3  # the newest snapshots always kept
_MAX_AGE_S = 3600.0  # older ones are removed once they are not among the newest


def snapshot_at(session: GitSession, root: Path, commit: str) -> Path:
    """The directory holding the files of ``commit`` under ``root``, built on first need."""
    final = root / commit
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        _write_tree(session, commit, building)
        _seal(building)
        try:
            building.rename(final)
        except OSError:  # another process finished first: theirs is the same tree
            _remove(building)
    except BaseException:
        _remove(building)
        raise
    _prune(root, keep=final)
    return final


def _write_tree(session: GitSession, commit: str, into: Path) -> None:
    listing = session.out("ls-tree", "-r", "-z", "--full-tree", commit)
    entries = []
    for record in listing.split(b"\0"):
        if record:
            meta, _, path = record.partition(b"\t")
            _mode, kind, blob = meta.split()
            if kind == b"blob":
                entries.append((blob.decode(), path.decode()))
    if not entries:
        return
    out = session.out("cat-file", "--batch",
                      stdin="".join(f"{blob}\n" for blob, _ in entries).encode())
    offset = 0
    for _, path in entries:
        header_end = out.index(b"\n", offset)
        size = int(out[offset:header_end].split()[2])
        start = header_end + 1
        target = into / path  # paths come from our own commits, checked by the path rules
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(out[start:start + size])
        offset = start + size + 1


def _seal(folder: Path) -> None:
    """Make ``folder`` and everything in it read-only for everyone."""
    for current, dirs, files in os.walk(folder):
        for name in files:
            os.chmod(os.path.join(current, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(current, name), 0o555)
    os.chmod(folder, 0o555)


def _prune(root: Path, *, keep: Path) -> None:
    snapshots = sorted((p for p in root.iterdir() if not p.name.startswith(".")),
                       key=lambda p: p.stat().st_mtime, reverse=True)
    now = time.time()
    for old in snapshots[_KEEP:]:
        if old != keep and now - old.stat().st_mtime > _MAX_AGE_S:
            _remove(old)


def _remove(folder: Path) -> None:
    for current, _dirs, _files in os.walk(folder):  # sealed folders refuse unlinking
        os.chmod(current, stat.S_IRWXU)
    shutil.rmtree(folder, ignore_errors=True)
