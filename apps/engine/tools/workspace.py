"""Confinement of the host-side file tools to a conversation's workspace (DESIGN 2.5, 4).

Two layers, because the agent can write into the workspace (Write, Bash) and so can plant
symbolic links there:

1. :func:`resolve_path` turns what the model wrote into an absolute path with every symbolic
   link resolved, and refuses it unless the result lies inside the (resolved) workspace root.
2. :func:`open_in_workspace` opens that path one component at a time from the root, each with
   ``O_NOFOLLOW``, so a link swapped in between the check and the open fails instead of being
   followed out (the check-then-use race). Non-regular files are refused before any read or
   truncation, so a FIFO can never block a worker thread.

:func:`walk_files` lists a tree for Glob and Grep without following directory links and without
yielding file links that lead outside; :func:`run_stoppable` runs such a walk in a worker thread
that stops when its caller is cancelled. POSIX only (``dir_fd``, ``O_NOFOLLOW``), like the
server.

Read-only mounts (:mod:`apps.engine.tools.mounts`, the wiki at ``wiki/``): :func:`locate` is
:func:`resolve_path` with the run's mount table. A path under a mounted name resolves inside the
mounted directory (with the same rules: no ``..`` out of it, no links out of it) and is refused
for writing; :func:`walk_view` lists a tree as the model sees it, the mounted directories in
place of what the workspace holds under their names.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from apps.engine.errors import ToolError
from apps.engine.tools.mounts import ReadOnlyMounts

__all__ = [
    "SKIPPED_DIRS",
    "Located",
    "display_path",
    "is_inside",
    "locate",
    "open_in_workspace",
    "relative_to_shown",
    "resolve_path",
    "run_stoppable",
    "walk_files",
    "walk_view",
    "workspace_root",
]

SKIPPED_DIRS = frozenset({".git", ".confab"})
"""Directory names Glob and Grep never enter: git internals, and confab's own state (stored
results would otherwise match every later search)."""


def workspace_root(workspace: Path) -> Path:
    """The workspace with every symbolic link resolved; ToolError if it is not a directory."""
    try:
        root = workspace.resolve(strict=True)
    except OSError as e:
        raise ToolError(f"The workspace directory is missing ({e.strerror}).") from e
    if not root.is_dir():
        raise ToolError("The workspace is not a directory.")
    return root


def is_inside(root: Path, path: Path) -> bool:
    """Whether ``path`` is ``root`` or below it (both absolute and resolved)."""
    return path == root or path.is_relative_to(root)


def resolve_path(workspace: Path, path: str) -> Path:
    """The absolute, link-free path inside ``workspace`` that ``path`` names.

    ``path`` is relative to the workspace, or absolute and inside it (spelled through the
    workspace as given or as resolved). ``..`` is allowed while it stays inside. The result may
    not exist yet (Write). Raises ToolError for an empty path, a ``~`` path, a path that leaves
    the workspace, and one that reaches outside through a symbolic link (dangling links too).
    """
    return locate(workspace, path).real


@dataclass(frozen=True, slots=True)
class Located:
    """A path as the file tools use it: ``real`` (absolute, link-free) lies in ``root`` (the
    resolved workspace, or the directory of the mount ``mount``); ``shown`` is how the model
    spells it: workspace-relative POSIX (``"wiki/Home.md"``), ``"."`` for the workspace."""

    root: Path
    real: Path
    shown: str
    mount: str | None = None


def locate(workspace: Path, path: str, mounts: ReadOnlyMounts | None = None, *,
           write: bool = False) -> Located:
    """Where ``path`` is, as :func:`resolve_path` finds it, with the run's read-only ``mounts``.

    A path under a mounted name (``wiki/...``, lexically, or through a link inside the
    workspace) resolves inside the mount's directory (blocking the first time: the directory
    may be built then) and never outside it; with ``write`` it is refused, before anything is
    resolved. Raises ToolError as :func:`resolve_path` does.
    """
    root = workspace_root(workspace)
    rel = _relative_spelling(workspace, root, path)
    lexical = os.path.normpath(rel)
    if lexical == ".." or lexical.startswith("../"):
        raise ToolError(
            f"Path {path!r} is outside the workspace. Use a path relative to the workspace "
            "root, or an absolute path inside it."
        )
    if mounts and (inside := mounts.split(lexical)) is not None:
        return _in_mount(mounts, *inside, spelled=path, write=write)
    # realpath (non-strict) follows links even when their target does not exist, so a dangling
    # link that points outside is caught here too, before Write could create its target.
    real = Path(os.path.realpath(root / lexical))
    if not is_inside(root, real):
        raise ToolError(
            f"Path {path!r} leads outside the workspace through a symbolic link; "
            "links that point outside the workspace are not followed."
        )
    shown = real.relative_to(root).as_posix()
    if mounts and (inside := mounts.split(shown)) is not None:  # a link to wiki/...
        return _in_mount(mounts, *inside, spelled=path, write=write)
    return Located(root, real, shown or ".")


def _in_mount(mounts: ReadOnlyMounts, name: str, rest: str, *, spelled: str,
              write: bool) -> Located:
    if write:
        note = mounts.note(name)
        raise ToolError(f"{spelled!r} is under {name}/, which is mounted read-only"
                        + (f": {note}" if note else "; it cannot be changed here."))
    source = mounts.source(name)
    real = Path(os.path.realpath(source / rest)) if rest else source
    if not is_inside(source, real):
        raise ToolError(f"Path {spelled!r} leads out of {name}/ through a symbolic link; "
                        "links are not followed out of it.")
    inner = real.relative_to(source).as_posix()
    return Located(source, real, f"{name}/{inner}" if inner != "." else name, name)


def _relative_spelling(workspace: Path, root: Path, path: str) -> str:
    """``path`` relative to the workspace, lexically; ToolError for unusable spellings."""
    if not path or not path.strip():
        raise ToolError("The path is empty; give a file path relative to the workspace.")
    if "\x00" in path:
        raise ToolError("The path contains a NUL character.")
    if path.startswith("~"):
        raise ToolError(
            f"Path {path!r}: home directories are outside the workspace; use a path relative "
            "to the workspace root."
        )
    if not os.path.isabs(path):
        return path
    spelled = os.path.normpath(path)
    # The model may know the workspace by the name it was given or by its resolved form.
    for base in (os.path.normpath(workspace.absolute()), str(root)):
        if spelled == base:
            return "."
        if spelled.startswith(base.rstrip("/") + "/"):
            return os.path.relpath(spelled, base)
    raise ToolError(
        f"Path {path!r} is outside the workspace. Use a path relative to the workspace root, "
        "or an absolute path inside it."
    )


def display_path(workspace: Path, path: Path) -> str:
    """``path`` as the model should see it: relative to the workspace, POSIX style ("." for the
    root itself); an absolute path string if it is not inside (never expected)."""
    root = workspace_root(workspace)
    candidate = path if path.is_absolute() else root / path
    for base in (root, workspace.absolute()):
        if is_inside(base, candidate):
            rel = candidate.relative_to(base).as_posix()
            return rel or "."
    return candidate.as_posix()


def open_in_workspace(
    workspace: Path, path: Path, *, write: bool = False, create_parents: bool = False
) -> BinaryIO:
    """Open the resolved ``path`` (from :func:`resolve_path`, so inside the workspace) without
    following any link.

    Read mode ("rb") or, with ``write``, a write handle that creates the file and truncates it
    once it is known to be a regular file. ``create_parents`` makes missing directories. Raises
    ToolError when a component became a link since it was checked, and for a path that is not a
    regular file (IsADirectoryError for directories, so callers can word their own message);
    FileNotFoundError when it does not exist.
    """
    root = workspace_root(workspace)
    parts = path.relative_to(root).parts
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    dir_fd = _open_parent_dirs(root, parts[:-1], create=create_parents)
    try:
        flags = os.O_WRONLY | os.O_CREAT if write else os.O_RDONLY | os.O_NONBLOCK
        fd = _no_follow(lambda: os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC,
                                        0o666, dir_fd=dir_fd), parts[-1], dir_fd)
    finally:
        os.close(dir_fd)
    try:
        _require_regular(fd, path)
        if write:
            os.ftruncate(fd, 0)
        return os.fdopen(fd, "wb" if write else "rb")
    except BaseException:
        os.close(fd)
        raise


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_parent_dirs(root: Path, parts: tuple[str, ...], *, create: bool) -> int:
    """A descriptor of ``root/parts``, walked one directory at a time without following links."""
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=dir_fd)
            next_fd = _no_follow(functools.partial(os.open, part, _DIR_FLAGS, dir_fd=dir_fd),
                                 part, dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
    except BaseException:
        os.close(dir_fd)
        raise
    return dir_fd


def _no_follow(opener: Callable[[], int], name: str, dir_fd: int) -> int:
    """Run ``opener`` (which opens ``name`` in ``dir_fd``), turning the errors ``O_NOFOLLOW``
    gives on a link into a ToolError.

    Linux answers ELOOP for a link, or ENOTDIR when ``O_DIRECTORY`` is set, which is also the
    answer for a plain file; lstat tells the two apart."""
    try:
        return opener()
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        if _is_link(name, dir_fd):
            raise ToolError(
                f"{name!r} became a symbolic link while it was being opened; refusing "
                "to follow it."
            ) from e
        if e.errno == errno.ENOTDIR:
            raise ToolError(f"{name!r} is a file, not a directory.") from e
        raise


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _require_regular(fd: int, path: Path) -> None:
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if not stat.S_ISREG(mode):
        raise ToolError(f"{path.name!r} is not a regular file (a device, FIFO or socket).")


def walk_files(root: Path, start: Path, stop: threading.Event | None = None, *,
               skip: frozenset[str] = frozenset()) -> Iterator[tuple[Path, Path]]:
    """Regular files under ``start`` as ``(path, real_path)``, in path order (depth first,
    names sorted within each directory).

    ``root`` and ``start`` are resolved. Directories in :data:`SKIPPED_DIRS` are not entered,
    directory links are not followed (no loops, no escapes), and a file link is yielded only
    when its target is a regular file inside ``root``. Entries whose path is in ``skip`` (a
    set of path strings) are left out. Stops early once ``stop`` is set.
    """
    stack = [iter(_sorted_entries(start))]
    while stack:
        if stop is not None and stop.is_set():
            return
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif entry.path in skip:
            continue
        elif entry.is_dir(follow_symlinks=False):
            if entry.name not in SKIPPED_DIRS:
                stack.append(iter(_sorted_entries(entry.path)))
        elif entry.is_file(follow_symlinks=False):
            yield Path(entry.path), Path(entry.path)
        elif entry.is_symlink():
            real = Path(os.path.realpath(entry.path))
            if is_inside(root, real) and real.is_file():
                yield Path(entry.path), real


def walk_view(start: Located, mounts: ReadOnlyMounts | None = None,
              stop: threading.Event | None = None) -> Iterator[tuple[str, Path, Path]]:
    """Regular files under the directory ``start`` as ``(shown, real_path, root)``: the
    workspace as the model sees it, with each mount's files under its name in place of what the
    workspace holds there. The rules of :func:`walk_files` apply inside each root; the workspace
    is walked in path order first, then the mounts by name."""
    if start.mount is not None:
        yield from _walk_under(start.mount, start.root, start.real, stop)
        return
    names = mounts.names() if mounts else []
    hidden = frozenset(str(start.root / name) for name in names)
    for file, real in walk_files(start.root, start.real, stop, skip=hidden):
        if mounts and mounts.split(real.relative_to(start.root).as_posix()) is not None:
            continue  # a link into what a mount hides
        yield file.relative_to(start.root).as_posix(), real, start.root
    if start.real == start.root:
        for name in names:
            assert mounts is not None
            source = mounts.source(name)
            yield from _walk_under(name, source, source, stop)


def _walk_under(name: str, source: Path, start: Path, stop: threading.Event | None
                ) -> Iterator[tuple[str, Path, Path]]:
    for file, real in walk_files(source, start, stop):
        yield f"{name}/{file.relative_to(source).as_posix()}", real, source


def relative_to_shown(shown: str, base: str) -> str:
    """``shown`` relative to the shown directory ``base`` (``"."`` is the workspace)."""
    return shown if base == "." else shown[len(base) + 1:]


def _sorted_entries(directory: str | Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []  # unreadable or vanished directory: skip it, as find(1) would


async def run_stoppable[T](fn: Callable[[threading.Event], T]) -> T:
    """Run ``fn(stop)`` in a worker thread; if the caller is cancelled (a timeout, a stopped
    run), set ``stop`` so the thread ends soon instead of walking on unobserved."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, stop)
    except asyncio.CancelledError:
        stop.set()
        raise
