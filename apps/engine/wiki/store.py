"""WikiStore: one team's bare repository and every operation on it (issue 9).

Writes never share an index: the content goes to a blob, a temporary index is read from the
commit the writer started from, a tree and a commit are written, and ``update-ref`` moves
``main`` only if it still points where the writer started (compare-and-swap). When ``main``
moved, or the page is no longer the blob the writer read, base / current / new are merged
three ways: a clean merge is committed (``merged=True``), an overlapping one raises
:class:`WikiConflict` with the merged text and its markers. Nothing is lost silently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from apps.engine.wiki.catalog import Catalog, FileChange, catalog_at, catalog_commit
from apps.engine.wiki.commits import author_name, blob_id
from apps.engine.wiki.errors import (
    CurrentPage,
    WikiConflict,
    WikiDamaged,
    WikiInvalid,
    WikiNotFound,
    WikiTooLarge,
    WikiUnavailable,
)
from apps.engine.wiki.gitcmd import GitSession, git_session, init_bare
from apps.engine.wiki.limits import WikiLimits
from apps.engine.wiki.merge import merge_text
from apps.engine.wiki.objects import cat_objects
from apps.engine.wiki.paths import (
    check_file_path,
    check_new_name,
    check_revision,
    is_attachment,
    is_page,
)
from apps.engine.wiki.reads import history_of
from apps.engine.wiki.search import search_kept, search_pages
from apps.engine.wiki.snapshot import snapshot_at
from apps.engine.wiki.texts import texts_of
from apps.engine.wiki.types import Author, HistoryEntry, Page, PageInfo, SearchHit, WriteResult
from apps.engine.wiki.writes import make_commit, move_main, store_blobs, writer_lock

__all__ = ["WikiRecord", "WikiStore"]

_BLOB = re.compile(r"\A[0-9a-f]{40}\Z")
_CAS_ATTEMPTS = 8
Plan = Callable[[GitSession, Catalog], tuple[list[FileChange], bool]]


class WikiRecord(Protocol):
    """The host's memory that a wiki's repository was created (its database, not the disk the
    repository is on): once it was, a missing repository is damage, never a fresh wiki."""

    def known(self) -> bool:
        """Whether the repository was created (and so must exist)."""
        ...

    def record(self) -> None:
        """Remember that the repository exists (idempotent)."""
        ...


class WikiStore:
    """The wiki in the bare repository at ``path`` (created on the first write).

    ``snapshots``: the directory under which read-only snapshots of ``main`` are kept, one per
    commit (``snapshots/<commit>``; default ``<path>.snapshots``). ``record``: where the host
    remembers that the repository exists (None: nowhere, so a missing one is an empty wiki).
    Every method is synchronous,
    thread-safe (each call opens and closes its own ``git.Repo``) and raises only
    :class:`~apps.engine.wiki.WikiError` subclasses. Paths are repository paths (``Home.md``,
    ``ops/Runbook.md``, ``_files/diagram.png``); revisions are 40-hex commit ids or ``HEAD``.
    """

    def __init__(self, path: Path, *, limits: WikiLimits | None = None,
                 snapshots: Path | None = None, record: WikiRecord | None = None) -> None:
        self.path = Path(path)
        self.limits = limits or WikiLimits()
        self.snapshots = snapshots or self.path.with_name(self.path.name + ".snapshots")
        self.record = record

    # -- reads -----------------------------------------------------------------------------

    def head(self) -> str | None:
        """The commit ``main`` points at, or None for a wiki nobody wrote yet."""
        with self._reading() as session:
            return _head(session) if session else None

    def main_ref_key(self) -> bytes | None:
        """Bytes that change whenever ``main`` moves, read without git, for caching what depends
        only on ``main``'s commit: the loose ref's file (``<commit>\\n``), else the packed refs'
        (git rewrites either by renaming a whole new file over it, so a read sees one state or
        the other). None when neither is there (no repository yet, an empty one, or a ref
        storage this does not know: reftable) or when ``main`` is a symbolic ref (its bytes
        stay while its target moves): callers then read through git."""
        for name in ("refs/heads/main", "packed-refs"):
            try:
                key = (self.path / name).read_bytes()
            except FileNotFoundError:
                continue
            except OSError:
                return None
            return None if key.startswith(b"ref:") else key
        return None

    def list(self, prefix: str = "") -> list[PageInfo]:
        """Every file at ``main`` whose path starts with ``prefix`` (pages and attachments;
        :func:`~apps.engine.wiki.is_page` tells them apart), sorted by path."""
        with self._reading() as session:
            if session is None:
                return []
            files = catalog_at(session, self.path, _head(session)).files
        return [info for path, info in files.items() if path.startswith(prefix)]

    def read(self, path: str, rev: str = "HEAD") -> Page:
        """A page's text at ``rev``. Raises WikiNotFound (no such page or revision, a malformed
        revision) and WikiInvalid (a path the rules refuse)."""
        if not is_page(self._check(path)):
            raise WikiInvalid("Not a page: pages end in '.md' outside _files/.")
        data, blob, commit = self._read(path, rev)
        return Page(path=path, content=data.decode("utf-8", "replace"), blob=blob,
                    commit=commit)

    def read_bytes(self, path: str, rev: str = "HEAD") -> tuple[bytes, str]:
        """Any file's bytes and blob id at ``rev`` (attachments). Errors as :meth:`read`."""
        data, blob, _ = self._read(self._check(path), rev)
        return data, blob

    def history(self, path: str, *, limit: int = 50) -> list[HistoryEntry]:
        """The commits that changed ``path``, newest first, following renames. WikiNotFound
        when no commit ever touched it."""
        self._check(path)
        with self._reading() as session:
            entries = history_of(session, path, limit=max(1, min(int(limit), 1000))) \
                if session and _head(session) else []
        if not entries:
            raise WikiNotFound("No such page.")
        return entries

    def diff(self, path: str, from_rev: str, to_rev: str) -> str:
        """The unified diff of ``path`` between two revisions ("" when equal)."""
        self._check(path)
        with self._reading() as session:
            old, new = (_commit_of(session, rev) for rev in (from_rev, to_rev))
            out = session.out("diff", "--no-ext-diff", "--no-textconv", "--no-color",
                              "--no-renames", old, new, "--", path)
        return out.decode("utf-8", "replace")

    def search(self, query: str, *, limit: int | None = None) -> list[SearchHit]:
        """Lines of pages at ``main`` containing ``query`` literally, ignoring case (CJK
        substrings included), at most ``limit`` (default ``limits.search_hits``). WikiInvalid
        for an empty query, one over 200 characters, or one with a line break."""
        if not isinstance(query, str) or not query.strip() or len(query) > 200 \
                or any(ch in query for ch in "\r\n\0"):
            raise WikiInvalid("Search for one line of text, 1 to 200 characters.")
        cap = max(1, min(limit or self.limits.search_hits, self.limits.search_hits))
        with self._reading() as session:
            head = _head(session) if session else None
            if head is None:
                return []
            pages = {path: info for path, info in catalog_at(session, self.path, head).files.items()
                     if is_page(path)}
            if sum(info.size for info in pages.values()) > self.limits.search_memory_bytes:
                return search_pages(session, head, query, limit=cap)
            texts = texts_of(session, (info.blob for info in pages.values()))
            return search_kept(pages, texts, query, limit=cap)

    def usage(self) -> int:
        """Bytes of every file at ``main`` (what the quota counts)."""
        with self._reading() as session:
            return catalog_at(session, self.path, _head(session)).total_bytes if session else 0

    def snapshot(self) -> Path | None:
        """A read-only directory with the files of ``main`` (None for an empty wiki), built
        once per commit under ``snapshots`` and shared by every caller."""
        with self._reading() as session:
            head = _head(session) if session else None
            return snapshot_at(session, self.snapshots, head) if head else None

    # -- writes ----------------------------------------------------------------------------

    def write(self, path: str, content: str | bytes, *, expected_blob: str | None,
              message: str, author: Author) -> WriteResult:
        """Create or replace a page (``str``) or an attachment (``bytes`` under ``_files/``).

        ``expected_blob``: None means create-only (WikiConflict when the file exists); else the
        blob the writer read: when the file changed since, the change is merged three ways.
        Raises WikiInvalid, WikiTooLarge, WikiConflict, WikiUnavailable.
        """
        data = self._encode(self._check_new(path), content)
        expected = _check_blob(expected_blob) if expected_blob is not None else None

        def plan(session: GitSession, catalog: Catalog) -> tuple[list[FileChange], bool]:
            current = catalog.files.get(path)
            if expected is None:
                if current is not None:
                    raise WikiConflict(f"{path} already exists.",
                                       current=_current(session, current))
                return [FileChange(path, data)], False
            if current is None:
                if _blob_or_none(session, expected) is None:
                    raise WikiNotFound("No such page.")  # it never had that version
                raise WikiConflict(f"{path} was deleted meanwhile.", current=None)
            if current.blob == blob_id(data):
                return [], False  # already so: no empty commit
            if current.blob == expected:
                return [FileChange(path, data)], False
            merged = self._merge(session, current, expected, data)
            if blob_id(merged) == current.blob:
                return [], False  # theirs already held this change
            return [FileChange(path, merged)], True

        return self._commit(plan, path=path, message=message or f"Update {path}", author=author)

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
             message: str, author: Author) -> WriteResult:
        """Replace the exact text ``old`` by ``new`` in the page as it is at ``main`` when the
        commit is made, so concurrent edits of other parts of the page never conflict.

        ``old`` must occur exactly once unless ``replace_all``. Raises WikiNotFound,
        WikiInvalid (``old`` missing or ambiguous, or equal to ``new``), WikiTooLarge.
        """
        if not is_page(self._check(path)):
            raise WikiInvalid("Only pages can be edited by replacing text.")
        if not old or old == new:
            raise WikiInvalid("old must be non-empty text that differs from new.")

        def plan(session: GitSession, catalog: Catalog) -> tuple[list[FileChange], bool]:
            text = _text(session, _existing(catalog, path).blob)
            found = text.count(old)
            if found == 0:
                raise WikiInvalid(f"The text to replace is not in {path} (read it again).")
            if found > 1 and not replace_all:
                raise WikiInvalid(f"The text to replace occurs {found} times in {path}: give "
                                  "more context, or replace all.")
            changed = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            return [FileChange(path, self._encode(path, changed))], False

        return self._commit(plan, path=path, message=message or f"Edit {path}", author=author)

    def rename(self, path: str, to: str, *, expected_blob: str, message: str,
               author: Author) -> WriteResult:
        """Move a file in one commit (with a ``Confab-Renamed-From`` trailer; history follows
        it). Raises WikiConflict when the file changed since ``expected_blob`` or ``to``
        exists (in any letter case), WikiNotFound, WikiInvalid."""
        self._check(path)
        if is_page(self._check_new(to)) != is_page(path) or to == path:
            raise WikiInvalid("A page is renamed to another page path, a file to another file.")
        expected = _check_blob(expected_blob)

        def plan(session: GitSession, catalog: Catalog) -> tuple[list[FileChange], bool]:
            current = _unchanged(session, catalog, path, expected)
            taken = catalog.files.get(to)
            if taken is not None:
                raise WikiConflict(f"{to} already exists.", current=_current(session, taken))
            data = _blob_bytes(session, current.blob)
            return [FileChange(path, None), FileChange(to, data)], False

        return self._commit(plan, path=to, message=message or f"Rename {path} to {to}",
                            author=author, trailers={"Confab-Renamed-From": path})

    def delete(self, path: str, *, expected_blob: str, message: str,
               author: Author) -> WriteResult:
        """Remove a file (its history stays). WikiConflict when it changed since
        ``expected_blob``; WikiNotFound when it is not there."""
        self._check(path)
        expected = _check_blob(expected_blob)

        def plan(session: GitSession, catalog: Catalog) -> tuple[list[FileChange], bool]:
            _unchanged(session, catalog, path, expected)
            return [FileChange(path, None)], False

        return self._commit(plan, path=path, message=message or f"Delete {path}",
                            author=author)

    def restore(self, path: str, rev: str, *, message: str, author: Author) -> WriteResult:
        """Make ``path`` what it was at ``rev`` again, in a new commit (history is never
        rewritten); recreates a deleted page. WikiNotFound when it did not exist at ``rev``.
        A page already equal to that revision is left as it is."""
        data, blob, commit = self._read(self._check(path), rev)

        def plan(session: GitSession, catalog: Catalog) -> tuple[list[FileChange], bool]:
            current = catalog.files.get(path)
            unchanged = current is not None and current.blob == blob
            return ([] if unchanged else [FileChange(path, data)]), False

        return self._commit(plan, path=path, author=author,
                            message=message or f"Restore {path} as of {commit[:10]}")

    def commit_files(self, files: dict[str, str | bytes], *, message: str,
                     author: Author) -> WriteResult:
        """Create or replace several files in one commit (seeding a wiki, importing pages):
        at most ``limits.files_per_commit``; ``changed=False`` when they already were so."""
        if not files:
            raise WikiInvalid("No files to commit.")
        data = {path: self._encode(self._check_new(path), content)
                for path, content in files.items()}

        def plan(session: GitSession, catalog: Catalog) -> tuple[list[FileChange], bool]:
            return [FileChange(path, body) for path, body in data.items()
                    if path not in catalog.files or catalog.files[path].blob != blob_id(body)
                    ], False

        return self._commit(plan, path=next(iter(data)), message=message, author=author)

    # -- machinery ------------------------------------------------------------------------

    @contextmanager
    def _reading(self) -> Iterator[GitSession | None]:
        """A session on the repository, or None while it does not exist (an empty wiki).
        WikiDamaged when it should exist."""
        if not self._exists():
            yield None
            return
        with git_session(self.path, self.limits.git_timeout_s) as session:
            yield session

    def _read(self, path: str, rev: str) -> tuple[bytes, str, str]:
        """``(bytes, blob, commit)`` of ``path`` at ``rev``."""
        check_revision(rev)
        with self._reading() as session:
            if session is None:
                raise WikiNotFound("No such page.")
            commit = _commit_of(session, rev)
            [found] = cat_objects(session, [f"{commit}:{path}"])
            if found.kind != "blob" or found.content is None or found.oid is None:
                _unreadable(session, commit, path)
                raise WikiNotFound("No such page.")
        return found.content, found.oid, commit

    def _commit(self, plan: Plan, *, path: str, message: str, author: Author,
                trailers: dict[str, str] | None = None) -> WriteResult:
        """Plan the change on the current ``main`` and publish it, again on a fresh ``main``
        whenever another writer got there first. When the plan changes nothing there is no
        commit: the result has ``changed=False``, the file's blob and the current ``main``."""
        if not self._exists():
            init_bare(self.path, self.limits.git_timeout_s)
        with writer_lock(self.path, self.limits.lock_timeout_s), \
                git_session(self.path, self.limits.git_timeout_s) as session:
            for _ in range(_CAS_ATTEMPTS):
                head = _head(session)
                catalog = catalog_at(session, self.path, head)
                changes, merged = plan(session, catalog)
                if not changes:
                    info = catalog.files.get(path)
                    return WriteResult(path, info.blob if info else None, head or "",
                                       changed=False)
                self._check_changes(catalog, changes)
                blobs = store_blobs(session, changes)
                when = datetime.now(UTC).replace(microsecond=0)
                commit = make_commit(session, head=head, changes=changes, blobs=blobs,
                                     message=message, trailers=trailers or {}, author=author,
                                     when=when)
                if move_main(session, new=commit, old=head):
                    if self.record is not None:
                        self.record.record()
                    catalog_commit(self.path, catalog, commit=commit, changes=changes,
                                   blobs=blobs, author=author_name(author), date=when)
                    return WriteResult(path, blobs.get(path), commit, merged)
        raise WikiUnavailable("The wiki kept changing under this write; try again.")

    def _exists(self) -> bool:
        """Whether the repository is there; WikiDamaged when it is not but was created."""
        if (self.path / "HEAD").is_file():
            return True
        if self.record is not None and self.record.known():
            raise WikiDamaged(self.path, "the repository is missing")
        return False

    def _check_changes(self, catalog: Catalog, changes: list[FileChange]) -> None:
        """Files per commit, the quota, and names that clash: that differ only by case, or a
        file where a folder is (issue 9)."""
        if len(changes) > self.limits.files_per_commit:
            raise WikiTooLarge(f"At most {self.limits.files_per_commit} files per change.")
        replaced = {c.path for c in changes}
        size = catalog.total_bytes - sum(
            catalog.files[p].size for p in replaced if p in catalog.files)
        size += sum(len(c.data) for c in changes if c.data is not None)
        if size > self.limits.quota_bytes and size > catalog.total_bytes:  # shrinking is fine
            quota = self.limits.quota_bytes
            shown = f"{quota / 2**20:.1f} MiB" if quota >= 2**20 else f"{quota} bytes"
            raise WikiTooLarge(f"The wiki would exceed its quota of {shown}.")
        # A clash is excused only by a file this change deletes (a rename that changes a
        # name's case); the written path itself is no excuse: a page written where a folder
        # is would replace the whole folder in the commit's tree.
        deleted = {c.path for c in changes if c.data is None}
        for change in changes:
            clash = catalog.clash(change.path) if change.data is not None else None
            if clash is not None and clash not in deleted:
                why = _clash_why(clash, change.path)
                raise WikiInvalid(f"{change.path} clashes with {clash}: {why}.")

    def _check(self, path: str) -> str:
        return check_file_path(path, attachment_extensions=self.limits.attachment_extensions)

    def _check_new(self, path: str) -> str:
        """A path a file is written to: :meth:`_check`'s rules and :func:`check_new_name`."""
        return check_new_name(self._check(path))

    def _encode(self, path: str, content: str | bytes) -> bytes:
        """The bytes to store at ``path``, within the limits."""
        if is_attachment(path):
            if not isinstance(content, bytes):
                raise WikiInvalid("An attachment's content is bytes.")
            if len(content) > self.limits.attachment_bytes:
                raise WikiTooLarge(f"Attachments are at most "
                                   f"{self.limits.attachment_bytes // (1024 * 1024)} MiB.")
            return content
        if not isinstance(content, str):
            raise WikiInvalid("A page's content is text.")
        if "\0" in content:
            raise WikiInvalid("A page may not contain NUL characters.")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as error:
            raise WikiInvalid("A page's text must be valid Unicode.") from error
        if len(data) > self.limits.page_bytes:
            raise WikiTooLarge(f"Pages are at most {self.limits.page_bytes // 1024} KiB.")
        return data

    def _merge(self, session: GitSession, current: PageInfo, expected: str,
               mine: bytes) -> bytes:
        """``mine`` merged with what changed since ``expected``; WikiConflict if they overlap."""
        theirs = _current(session, current)
        base = _blob_or_none(session, expected) if is_page(current.path) else None
        if base is None or b"\0" in base:  # not a page's text: nothing to merge with
            raise WikiConflict(f"{current.path} changed since the version you started from.",
                               current=theirs)
        text, clean = merge_text(session, base=base.decode("utf-8", "replace"),
                                 current=theirs.content, mine=mine.decode("utf-8"))
        if not clean:
            raise WikiConflict(f"{current.path} was changed meanwhile in the same place.",
                               current=theirs, merged_text=text)
        return self._encode(current.path, text)


def _head(session: GitSession) -> str | None:
    return session.ref("refs/heads/main")


def _commit_of(session: GitSession, rev: str) -> str:
    """The commit ``rev`` (a checked revision) names; WikiNotFound if none."""
    check_revision(rev)
    if rev == "HEAD":
        if (head := _head(session)) is None:
            raise WikiNotFound("No such revision.")
        return head
    name = f"{rev}^{{commit}}"
    status, out = session.run("rev-parse", "--verify", "--quiet", "--end-of-options", name,
                              ok=(0, 1, 128))
    if status != 0:
        raise WikiNotFound("No such revision.")
    return out.decode().strip()


def _unreadable(session: GitSession, commit: str, path: str) -> None:
    """Raise WikiDamaged when ``commit``'s tree names ``path`` but git could not read it."""
    if session.out("ls-tree", "-z", "--full-tree", commit, "--", path):
        raise WikiDamaged(session.git_dir, f"{path} at {commit} cannot be read")


def _check_blob(blob: str) -> str:
    if not isinstance(blob, str) or not _BLOB.match(blob):
        raise WikiInvalid("expected_blob must be the 40-character blob id a read returned.")
    return blob


def _blob_or_none(session: GitSession, blob: str) -> bytes | None:
    """The bytes of ``blob``, None when the repository has no such blob."""
    [found] = cat_objects(session, [blob])
    return found.content if found.kind == "blob" else None


def _blob_bytes(session: GitSession, blob: str) -> bytes:
    data = _blob_or_none(session, blob)
    if data is None:
        raise WikiNotFound("No such file.")
    return data


def _text(session: GitSession, blob: str) -> str:
    return _blob_bytes(session, blob).decode("utf-8", "replace")


def _current(session: GitSession, info: PageInfo) -> CurrentPage:
    """The file as it is now, for a conflict answer (an attachment's text is "")."""
    return CurrentPage(content=_text(session, info.blob) if is_page(info.path) else "",
                       blob=info.blob)


def _existing(catalog: Catalog, path: str) -> PageInfo:
    info = catalog.files.get(path)
    if info is None:
        raise WikiNotFound("No such page.")
    return info


def _unchanged(session: GitSession, catalog: Catalog, path: str, expected: str) -> PageInfo:
    """The file at ``path``, which must still be the blob ``expected``."""
    info = _existing(catalog, path)
    if info.blob != expected:
        raise WikiConflict(f"{path} changed since the version you started from.",
                           current=_current(session, info))
    return info


def _clash_why(clash: str, path: str) -> str:
    """Why writing ``path`` clashes with the existing ``clash`` (Catalog.clash), in words."""
    if clash == path:
        return "a folder has that name"
    if path.startswith(clash + "/"):
        return "a file has the name of a folder on the path"
    return "names in a folder must differ by more than letter case"
