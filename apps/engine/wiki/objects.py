"""Reading git objects in bulk: the output formats of ``cat-file --batch`` and ``ls-tree -l``.

``cat-file --batch`` answers each input line with ``<id> <type> <size>\\n<content>\\n``, or
``<name> missing\\n`` for an object it cannot find *or cannot read* (a corrupt one says so only
on stderr); ``ls-tree -l`` prints ``BAD`` for the size of an object it cannot read
(https://git-scm.com/docs/git-cat-file#_batch_output, https://git-scm.com/docs/git-ls-tree).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from apps.engine.wiki.errors import WikiDamaged
from apps.engine.wiki.gitcmd import GitSession

__all__ = ["BatchObject", "cat_objects", "list_files", "read_blobs"]


class BatchObject(NamedTuple):
    """One answer of ``cat-file --batch``: the object's id, type and content; all None when
    git has no such (readable) object."""

    oid: str | None
    kind: str | None
    content: bytes | None


def cat_objects(session: GitSession, names: Sequence[str]) -> Iterator[BatchObject]:
    """One :class:`BatchObject` per object name (``<id>``, ``<commit>:<path>``) in ``names``,
    in order, from one process. Names never hold a line break (the path rules see to it)."""
    if not names:
        return
    out = session.out("cat-file", "--batch", stdin="".join(f"{n}\n" for n in names).encode())
    offset = 0
    for _ in names:
        end = out.index(b"\n", offset)
        header = out[offset:end].split()
        offset = end + 1
        if header[-1] == b"missing":
            yield BatchObject(None, None, None)
            continue
        size = int(header[2])
        yield BatchObject(header[0].decode(), header[1].decode(), out[offset:offset + size])
        offset += size + 1


def read_blobs(session: GitSession, blobs: Sequence[str]) -> Iterator[tuple[str, bytes]]:
    """``(blob id, content)`` for each of ``blobs``, ids a tree of the repository names: one
    git cannot read is damage (WikiDamaged), not a missing file."""
    for blob, found in zip(blobs, cat_objects(session, blobs), strict=True):
        if found.content is None:
            raise WikiDamaged(session.git_dir, f"object {blob} cannot be read")
        yield blob, found.content


def list_files(session: GitSession, commit: str) -> dict[str, tuple[str, int]]:
    """``path -> (blob id, size in bytes)`` of every file at ``commit``; WikiDamaged when git
    cannot read one of them."""
    out = session.out("ls-tree", "-r", "-l", "-z", "--full-tree", commit)
    files = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        _mode, kind, blob, size = meta.split()
        if kind != b"blob":
            continue
        if not size.isdigit():  # "BAD"
            raise WikiDamaged(session.git_dir, f"object {blob.decode()} ({path.decode()}) "
                              "cannot be read")
        files[path.decode()] = (blob.decode(), int(size))
    return files
