"""Read-only snapshots of ``main``: one directory per commit, shared by every run that needs it.

The files are written by us from ``ls-tree`` and ``cat-file`` output, never by a git checkout,
so no filter, attribute or hook the repository could name ever runs. A snapshot is built in a
private directory and renamed into place, so a reader sees all of it or nothing, and two
builders race harmlessly. Old snapshots are removed once newer ones exist and nobody could
still be starting from them (DESIGN 3.7).

Snapshots share their files' content: each blob is kept once, read-only, in a content store
(``<root>/.blobs/<blob id>``), and every snapshot's file is a hard link to it, so N snapshots of
a wiki cost its size once plus what changed between them. A build reads from git only the
blobs not stored yet, in batches of at most :data:`BATCH_BYTES`. A blob enters the store as a
second link to a file already complete in a build, so the store never holds a partial file.
Where hard links fail (another filesystem, one without links, too many links) the file is
copied instead.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from apps.engine.wiki.gitcmd import GitSession
from apps.engine.wiki.objects import list_files, read_blobs

__all__ = ["BATCH_BYTES", "BLOBS", "snapshot_at"]

BLOBS = ".blobs"  # the content store's folder under the snapshots' root
BATCH_BYTES = 8 * 1024 * 1024  # content one cat-file call reads at most (beyond one blob)
_KEEP = 3  # the newest snapshots always kept
_MAX_AGE_S = 3600.0  # older ones are removed once they are not among the newest
_NO_LINK = frozenset({errno.EXDEV, errno.EPERM, errno.EMLINK})  # copy instead


@dataclass(slots=True)
class _Blob:
    """One blob of the tree: its size in bytes and every path it is at."""

    size: int
    paths: list[str] = field(default_factory=list)


def snapshot_at(session: GitSession, root: Path, commit: str) -> Path:
    """The directory holding the files of ``commit`` under ``root`` (``root/<commit>``), built
    on first need; raises WikiUnavailable when git fails."""
    final = root / commit
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    store = root / BLOBS
    store.mkdir(exist_ok=True, mode=0o700)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        _write_tree(session, commit, building, store)
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


def _write_tree(session: GitSession, commit: str, into: Path, store: Path) -> None:
    """Every file of ``commit`` under ``into``: linked from ``store``, the rest read from git
    and added to it."""
    blobs = _listing(session, commit)
    for folder in {os.path.dirname(p) for blob in blobs.values() for p in blob.paths}:
        (into / folder).mkdir(parents=True, exist_ok=True)  # paths come from our own commits
    missing = [blob for blob, entry in blobs.items()
               if not _place(store / blob, into, entry.paths)]
    for batch in _batches(missing, blobs):
        for blob, data in read_blobs(session, batch):
            paths = blobs[blob].paths
            first = into / paths[0]
            with open(first, "xb") as file:  # a new file: never one shared with the store
                file.write(data)
            os.chmod(first, 0o444)  # before it is shared: the store's files are read-only
            _keep(first, store / blob)
            for path in paths[1:]:
                _link(first, into / path)


def _listing(session: GitSession, commit: str) -> dict[str, _Blob]:
    """``blob id -> _Blob`` for every file of ``commit`` (sizes too)."""
    blobs: dict[str, _Blob] = {}
    for path, (blob, size) in list_files(session, commit).items():
        blobs.setdefault(blob, _Blob(size)).paths.append(path)
    return blobs


def _place(source: Path, into: Path, paths: list[str]) -> bool:
    """Link (or copy) ``source`` to each of ``paths`` under ``into``; False, with nothing
    placed, when ``source`` is not there (never stored, or pruned meanwhile)."""
    first = into / paths[0]
    if not _link(source, first):
        return False
    for path in paths[1:]:  # from our own copy: the store's may be pruned meanwhile
        _link(first, into / path)
    return True


def _link(source: Path, target: Path) -> bool:
    """Hard-link ``source`` as ``target``, copying it where links fail; False when
    ``source`` does not exist."""
    try:
        try:
            os.link(source, target)
        except OSError as error:
            if error.errno not in _NO_LINK:
                raise
            shutil.copyfile(source, target)
    except FileNotFoundError:
        return False
    return True


def _keep(built: Path, stored: Path) -> None:
    """Add ``built`` (complete, read-only) to the store as ``stored``, unless it holds that blob
    already (another builder was first: the content is the same) or links do not work here."""
    try:
        os.link(built, stored)
    except FileExistsError:
        pass
    except OSError as error:
        if error.errno not in _NO_LINK:
            raise


def _batches(blobs: list[str], sizes: dict[str, _Blob]) -> Iterator[list[str]]:
    """``blobs`` in runs of at most :data:`BATCH_BYTES` of content (a larger blob alone)."""
    batch: list[str] = []
    held = 0
    for blob in blobs:
        if batch and held + sizes[blob].size > BATCH_BYTES:
            yield batch
            batch, held = [], 0
        batch.append(blob)
        held += sizes[blob].size
    if batch:
        yield batch


def _seal(folder: Path) -> None:
    """Make ``folder`` and everything in it read-only for everyone."""
    for current, dirs, files in os.walk(folder):
        for name in files:
            os.chmod(os.path.join(current, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(current, name), 0o555)
    os.chmod(folder, 0o555)


def _prune(root: Path, *, keep: Path) -> None:
    """Remove the snapshots past the newest :data:`_KEEP` and older than :data:`_MAX_AGE_S`,
    then the stored blobs no snapshot (or build) links any more."""
    snapshots = sorted((p for p in root.iterdir() if not p.name.startswith(".")),
                       key=lambda p: p.stat().st_mtime, reverse=True)
    now = time.time()
    for old in snapshots[_KEEP:]:
        if old != keep and now - old.stat().st_mtime > _MAX_AGE_S:
            _remove(old)
    # A builder linking one of these right now finds it gone and reads it from git again.
    with os.scandir(root / BLOBS) as entries:
        for entry in entries:
            if entry.stat(follow_symlinks=False).st_nlink == 1:
                Path(entry.path).unlink(missing_ok=True)


def _remove(folder: Path) -> None:
    for current, _dirs, _files in os.walk(folder):  # sealed folders refuse unlinking
        os.chmod(current, stat.S_IRWXU)
    shutil.rmtree(folder, ignore_errors=True)
