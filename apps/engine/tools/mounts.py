"""Read-only mounts: directories from outside the workspace that a run sees inside it.

A run's workspace may show a directory the host owns under a top-level name — the team wiki's
snapshot at ``wiki/`` (DESIGN 3.7). The host-side file tools consult this table before they
touch the disk: Read, Glob and Grep see the mounted directory under its name (and not whatever
the workspace itself holds there); Write and Edit refuse every path under it. Bash gets the same
directories as ``--ro-bind`` mounts inside bubblewrap (``sandbox.bwrap_argv``).

A mount's directory is resolved lazily, once per table (one run), the first time a tool needs
it, so a run that never looks at the wiki never builds its snapshot, and a run that does sees
one stable view from its first look to its end.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["ReadOnlyMounts", "empty_directory"]

Source = Callable[[], Path | None]
"""Returns the directory to show (None: nothing to show yet, e.g. a wiki nobody wrote). May
block (it may build a snapshot): tools call it from a worker thread."""

_EMPTY_LOCK = threading.Lock()
_EMPTY: Path | None = None


def empty_directory() -> Path:
    """One empty, read-only directory per process, shown for a mount with nothing in it."""
    global _EMPTY
    with _EMPTY_LOCK:
        if _EMPTY is None or not _EMPTY.is_dir():
            path = Path(tempfile.mkdtemp(prefix="confab-empty-mount-")).resolve()
            os.chmod(path, 0o555)
            _EMPTY = path
        return _EMPTY


class ReadOnlyMounts:
    """Top-level names of the workspace (``"wiki"``) mapped to directories resolved on first
    use; ``notes``: per name, what a refused write is told (``"change pages with WikiEdit"``).
    Thread-safe: the file tools run in worker threads, possibly several at once."""

    def __init__(self, sources: Mapping[str, Source] | None = None, *,
                 notes: Mapping[str, str] | None = None) -> None:
        for name in sources or {}:
            if not name or "/" in name or name in (".", ".."):
                raise ValueError(f"a mount name is one plain path segment, not {name!r}")
        self._sources = dict(sources or {})
        self._notes = dict(notes or {})
        self._resolved: dict[str, Path] = {}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._sources)

    def names(self) -> list[str]:
        """The mounted names, sorted."""
        return sorted(self._sources)

    def __contains__(self, name: object) -> bool:
        return name in self._sources

    def note(self, name: str) -> str:
        """What the model is told when it tries to write under ``name`` (how to change it)."""
        return self._notes.get(name, "")

    def split(self, relative: str) -> tuple[str, str] | None:
        """``(name, rest)`` when the normalized workspace-relative POSIX path ``relative`` lies
        in a mount (``"wiki/ops/x.md"`` -> ``("wiki", "ops/x.md")``, ``"wiki"`` ->
        ``("wiki", "")``), else None."""
        name, _, rest = relative.partition("/")
        return (name, rest) if name in self._sources else None

    def source(self, name: str) -> Path:
        """The resolved directory mounted at ``name``, computed once (blocking the first time).

        A source that gives None, or a directory that is missing, shows as an empty directory.
        Raises KeyError for a name that is not mounted; whatever the source raises propagates
        (and the next call tries again)."""
        with self._lock:
            found = self._resolved.get(name)
            if found is None:
                directory = self._sources[name]()
                found = (directory.resolve() if directory is not None and directory.is_dir()
                         else empty_directory())
                self._resolved[name] = found
            return found

    def resolved(self) -> dict[str, Path]:
        """Every mount's directory (resolving those not resolved yet)."""
        return {name: self.source(name) for name in self.names()}
