"""The tree of a new commit, rebuilt only along the paths it changes.

A commit that changes a few files needs new trees for those files' folders and their ancestors
alone; every other subtree keeps its id. Loading the whole tree into an index (``read-tree``,
``update-index``, ``write-tree``) costs time in proportion to the wiki (about 40 ms at 10,000
pages); this costs the depth of the changed paths: one ``cat-file`` for the old folders, one
``hash-object`` for the new ones.

Git's tree format (gitformat-loose, "tree objects"): entries ``<octal mode> <name>\\0<20-byte
id>``, sorted by name bytes with a folder compared as ``<name>/``; gitpython's
``tree_to_stream`` and ``tree_entries_from_data`` write and read them.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence

from git.objects.fun import tree_entries_from_data, tree_to_stream

from apps.engine.wiki.catalog import FileChange
from apps.engine.wiki.errors import WikiDamaged, WikiInvalid, WikiUnavailable
from apps.engine.wiki.gitcmd import GitSession
from apps.engine.wiki.objects import cat_objects

__all__ = ["write_tree"]

_FILE = 0o100644
_FOLDER = 0o040000

Entries = dict[str, tuple[int, bytes]]  # name -> (mode, binary id)


def write_tree(session: GitSession, head: str | None, changes: Sequence[FileChange],
               blobs: Mapping[str, str]) -> str:
    """The id of ``head``'s tree with ``changes`` applied, written to the object store.

    ``blobs``: ``path -> blob id`` for every change that stores data (removals absent). A
    folder left empty disappears, as in git. Raises WikiInvalid when a changed path runs through
    a file, WikiUnavailable when git fails.
    """
    folders = _folders_of(change.path for change in changes)
    entries = _read_folders(session, head, folders)
    for change in changes:
        folder, _, name = change.path.rpartition("/")
        if change.data is None:
            entries[folder].pop(name, None)
        else:
            entries[folder][name] = (_FILE, bytes.fromhex(blobs[change.path]))
    trees: dict[str, bytes] = {}
    root = ""
    for folder in sorted(folders, key=lambda f: f.count("/") if f else -1, reverse=True):
        data = _serialize(entries[folder])
        oid = hashlib.sha1(b"tree %d\0" % len(data) + data, usedforsecurity=False)
        if not folder:
            root = oid.hexdigest()
        parent, _, name = folder.rpartition("/")
        if folder and not data:
            entries[parent].pop(name, None)
            continue
        trees[oid.hexdigest()] = data
        if folder:
            entries[parent][name] = (_FOLDER, oid.digest())
    _store_trees(session, trees)
    return root


def _folders_of(paths: Iterable[str]) -> set[str]:
    """Every folder that holds one of ``paths``, their ancestors and the root ``""``."""
    folders = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        folders.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return folders


def _read_folders(session: GitSession, head: str | None, folders: set[str]) -> dict[str, Entries]:
    """``folder -> entries`` at ``head`` (empty for a folder that does not exist yet)."""
    entries: dict[str, Entries] = {folder: {} for folder in folders}
    if head is None:
        return entries
    order = sorted(folders)
    names = [f"{head}:{folder}" if folder else f"{head}^{{tree}}" for folder in order]
    missing = []
    for folder, found in zip(order, cat_objects(session, names), strict=True):
        if found.content is None:
            missing.append(folder)  # a folder this commit creates, unless its parent has it
            continue
        if found.kind != "tree":
            raise WikiInvalid(f"{folder} is a file, so it cannot hold other files.")
        entries[folder] = {name: (mode, binsha) for binsha, mode, name
                           in tree_entries_from_data(found.content)}
    for folder in missing:
        parent, _, name = folder.rpartition("/")
        if not folder or name in entries[parent]:  # listed, yet unreadable: never drop it
            raise WikiDamaged(session.git_dir, f"the tree of {folder or 'the root'} at {head} "
                              "cannot be read")
    return entries


def _serialize(entries: Entries) -> bytes:
    """One tree's bytes, entries in git's order (a folder sorts as ``<name>/``)."""
    ordered = sorted(((binsha, mode, name) for name, (mode, binsha) in entries.items()),
                     key=lambda e: e[2].encode() + (b"/" if e[1] == _FOLDER else b""))
    chunks: list[bytes] = []
    tree_to_stream(ordered, chunks.append)
    return b"".join(chunks)


def _store_trees(session: GitSession, trees: Mapping[str, bytes]) -> None:
    """Write ``trees`` (``id -> bytes``) with git, which checks each; the ids must agree."""
    with tempfile.TemporaryDirectory(prefix="confab-trees-") as folder:
        names = []
        for number, data in enumerate(trees.values()):
            name = os.path.join(folder, str(number))
            with open(name, "wb") as handle:
                handle.write(data)
            names.append(name)
        out = session.out("hash-object", "-w", "-t", "tree", "--stdin-paths",
                          stdin="".join(f"{name}\n" for name in names).encode())
    if out.decode().split() != list(trees):
        raise WikiUnavailable("git wrote other tree ids than the ones computed.")
