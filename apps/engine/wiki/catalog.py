"""The catalog: every file at one commit of ``main`` with its blob, size, title and last change.

Listing a 10,000-page wiki with titles and "updated by" from git alone would read every blob and
walk the history on every request. The catalog does that once per process and team, then
follows ``main`` incrementally: this process's own commits update it in memory, commits made
elsewhere (another worker) by one ``ls-tree`` and a ``log`` of the new range. It is derived
data: dropping it loses nothing.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from apps.engine.wiki.gitcmd import GitSession
from apps.engine.wiki.objects import list_files
from apps.engine.wiki.paths import folder_key, is_page
from apps.engine.wiki.texts import keep, texts_of
from apps.engine.wiki.types import PageInfo

__all__ = ["Catalog", "FileChange", "catalog_at", "catalog_commit", "title_of"]

_CACHED_TEAMS = 64
_TITLE_LINES = 50
_HEADING = re.compile(r"#[ \t]+(.+?)[ \t#]*$")
_cache: OrderedDict[str, Catalog] = OrderedDict()
_cache_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class FileChange:
    """One path a commit changes: ``data`` to store there, or None to remove it."""

    path: str
    data: bytes | None


class Catalog:
    """The files at ``commit`` (None: the empty wiki): ``files`` by path, sorted."""

    __slots__ = ("_names", "commit", "files")

    def __init__(self, commit: str | None, files: Mapping[str, PageInfo]) -> None:
        self.commit = commit
        self.files = files
        self._names: dict[str, dict[str, tuple[str, bool]]] | None = None

    @property
    def total_bytes(self) -> int:
        """What the quota counts: the size of every file."""
        return sum(info.size for info in self.files.values())

    def clash(self, path: str) -> str | None:
        """An existing file or folder that ``path`` would collide with, else None: the same
        name in one folder up to letter case or width (``home.md`` and ``Home.md``,
        ``docs/x.md`` and ``Docs/y.md``), or a file where the path needs a folder."""
        if path in self.files:
            return None
        parts = path.split("/")
        for depth, name in enumerate(parts):
            folder = "/".join(parts[:depth])
            found = self._folder_names().get(folder, {}).get(folder_key(name))
            if found is None:
                return None
            if found != (name, depth < len(parts) - 1):
                return "/".join([*parts[:depth], found[0]])
        return None

    def _folder_names(self) -> dict[str, dict[str, tuple[str, bool]]]:
        """``folder -> {folder_key(name): (name, is_folder)}``, built on first need."""
        if self._names is None:
            names: dict[str, dict[str, tuple[str, bool]]] = {}
            for path in self.files:
                parts = path.split("/")
                for depth, name in enumerate(parts):
                    names.setdefault("/".join(parts[:depth]), {}).setdefault(
                        folder_key(name), (name, depth < len(parts) - 1))
            self._names = names
        return self._names


def title_of(path: str, text: str) -> str:
    """A page's first ``# `` heading in its first lines, else its file name without ``.md``."""
    if is_page(path):
        for line in text.splitlines()[:_TITLE_LINES]:
            match = _HEADING.match(line)
            if match:
                return match.group(1).strip()
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if is_page(path) else name


def catalog_at(session: GitSession, git_dir: Path, commit: str | None) -> Catalog:
    """The catalog of ``commit``: from the cache, brought up to date, or built."""
    key = str(git_dir)
    with _cache_lock:
        cached = _cache.get(key)
    if commit is None:
        return Catalog(None, {})
    if cached is not None and cached.commit == commit:
        return cached
    fresh = _advance(session, cached, commit) if cached and cached.commit else \
        _build(session, commit)
    _remember(key, fresh)
    return fresh


def catalog_commit(git_dir: Path, before: Catalog, *, commit: str, changes: Iterable[FileChange],
                   blobs: Mapping[str, str], author: str,
                   date: datetime) -> None:
    """Record this process's own commit on top of ``before`` without asking git again."""
    files = dict(before.files)
    same_paths = True
    for change in changes:
        same_paths = same_paths and change.data is not None and change.path in files
        if change.data is None:
            files.pop(change.path, None)
            continue
        text = change.data.decode("utf-8", "replace") if is_page(change.path) else ""
        if text:
            keep({blobs[change.path]: (text, len(change.data))})
        title = title_of(change.path, text)
        files[change.path] = PageInfo(path=change.path, title=title, blob=blobs[change.path],
                                      size=len(change.data), updated_at=date,
                                      updated_by=author, commit=commit)
    if same_paths:  # the order holds and so does the folder map, which depends on paths alone
        after = Catalog(commit, files)
        after._names = before._names
    else:
        after = Catalog(commit, dict(sorted(files.items())))
    _remember(str(git_dir), after)


def _remember(key: str, catalog: Catalog) -> None:
    with _cache_lock:
        _cache[key] = catalog
        _cache.move_to_end(key)
        while len(_cache) > _CACHED_TEAMS:
            _cache.popitem(last=False)


def _build(session: GitSession, commit: str) -> Catalog:
    tree = list_files(session, commit)
    changed = _last_changes(session, commit, set(tree))
    return Catalog(commit, _infos(session, tree, changed, {}))


def _advance(session: GitSession, cached: Catalog, commit: str) -> Catalog:
    """The cached catalog brought forward to ``commit``, or built anew when ``main`` did not
    move forward from it (an operator reset it, or restored another copy of the repository)."""
    status, _ = session.run("merge-base", "--is-ancestor", cached.commit, commit,
                            ok=(0, 1, 128))
    if status != 0:
        return _build(session, commit)
    tree = list_files(session, commit)
    moved = {path for path, (blob, _) in tree.items()
             if path not in cached.files or cached.files[path].blob != blob}
    changed = _last_changes(session, commit, moved, since=cached.commit)
    kept = {path: info for path, info in cached.files.items() if path in tree and path not in moved}
    return Catalog(commit, _infos(session, {p: tree[p] for p in moved}, changed, kept))


def _last_changes(session: GitSession, commit: str, paths: set[str], *,
                  since: str | None = None) -> dict[str, tuple[str, str, datetime]]:
    """``path -> (commit, author name, date)`` of the newest commit that touched each of
    ``paths`` (in ``since..commit`` when given)."""
    found: dict[str, tuple[str, str, datetime]] = {}
    if not paths:
        return found
    span = f"{since}..{commit}" if since else commit
    out = session.out("log", "-z", "--no-renames", "--format=%x1e%H%x1f%an%x1f%at",
                      "--name-only", span)
    last = None
    for record in out.split(b"\x1e")[1:]:
        header, _, names = record.partition(b"\0")
        sha, name, stamp = header.decode("utf-8", "replace").split("\x1f")
        last = (sha, name, datetime.fromtimestamp(int(stamp), UTC))
        for raw in names.lstrip(b"\n").split(b"\0"):
            path = raw.decode("utf-8", "replace")
            if path in paths and path not in found:
                found[path] = last
        if len(found) == len(paths):
            break
    for path in paths - found.keys():  # reached only through a merge: credit the oldest seen
        if last is not None:
            found[path] = last
    return found


def _infos(session: GitSession, tree: Mapping[str, tuple[str, int]],
           changed: Mapping[str, tuple[str, str, datetime]],
           kept: Mapping[str, PageInfo]) -> dict[str, PageInfo]:
    texts = texts_of(session, (blob for path, (blob, _) in tree.items() if is_page(path)))
    files = dict(kept)
    for path, (blob, size) in tree.items():
        sha, name, date = changed[path]
        files[path] = PageInfo(path=path, title=title_of(path, texts.get(blob, "")), blob=blob,
                               size=size, updated_at=date, updated_by=name, commit=sha)
    return dict(sorted(files.items()))
