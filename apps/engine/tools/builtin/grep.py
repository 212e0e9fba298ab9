"""Grep: search the contents of workspace files with a Python regular expression.

Pure Python, not ripgrep, so results do not depend on what the host has installed. Patterns are
compiled with the ``regex`` package (``re`` syntax) rather than ``re``: it matches without
holding the GIL and takes a timeout, so a pattern that backtracks catastrophically on a long line
ends with a clear error after :data:`SEARCH_BUDGET_S` seconds instead of stalling the whole
server (``re`` cannot be interrupted). The search runs in a worker thread that stops when the
call is cancelled. Files are visited in path
order (the walk of :func:`~apps.engine.tools.workspace.walk_files`: no ``.git``/``.confab``, no
links out); a file with a NUL byte in its first 8 KiB is treated as binary and skipped (the
heuristic of grep and ripgrep); other bytes that are not UTF-8 read as U+FFFD. Output stops at
:data:`MAX_RESULTS` lines, with a note.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, Literal

import regex as re

from apps.engine.errors import ToolError
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.builtin.glob import compile_glob
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.tools.workspace import (
    locate,
    open_in_workspace,
    relative_to_shown,
    run_stoppable,
    walk_view,
)

__all__ = ["MAX_LINE_CHARS", "MAX_RESULTS", "GrepTool", "OutputMode", "grep_files"]

MAX_RESULTS = 200
"""Output lines (matching lines, or files) before the search stops."""

MAX_LINE_CHARS = 300
"""A matching line is cut here in the output."""

SEARCH_BUDGET_S = 20.0
"""Matching time one Grep call may spend in all."""

OutputMode = Literal["content", "files_with_matches", "count"]

DESCRIPTION = f"""\
Searches file contents in the workspace with a regular expression (Python `re` syntax, e.g. \
"def \\w+\\(" or "TODO|FIXME"; prefix "(?i)" to ignore case).

- path: a file or directory to search (default: the workspace root).
- glob: only search files matching this pattern, e.g. "*.py" or "*.{{ts,tsx}}" (a pattern without \
"/" matches file names at any depth; with "/", paths relative to `path`, e.g. "src/**/*.py").
- output_mode: "content" (default) gives `path:line:text` lines; "files_with_matches" gives \
the paths of matching files; "count" gives `path:count`.
- Paths are relative to the workspace root. Binary files, .git and .confab are skipped. At \
most {MAX_RESULTS} results are returned; a line is cut after {MAX_LINE_CHARS} characters.
- To find files by name, use Glob."""


class GrepTool(BaseTool):
    """``Grep {pattern, path?, glob?, output_mode?}``."""

    spec = ToolSpec(
        name="Grep",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string",
                            "description": "The regular expression to search for."},
                "path": {"type": "string",
                         "description": "The file or directory to search (default: the "
                                        "workspace root)."},
                "glob": {"type": "string",
                         "description": "Only search files matching this glob, e.g. '*.py'."},
                "output_mode": {"type": "string",
                                "enum": ["content", "files_with_matches", "count"],
                                "description": "What to return (default 'content')."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        concurrency=Concurrency.ALWAYS,
    )

    def prepare_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Drop ``null`` values, which some models send for "not given"."""
        return {k: v for k, v in arguments.items() if v is not None}

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        args, workspace, mounts = ctx.arguments, ctx.workspace, ctx.mounts
        return ToolOutput(await run_stoppable(lambda stop: grep_files(
            workspace, args["pattern"], args.get("path"), args.get("glob"),
            args.get("output_mode", "content"), stop, mounts)))


def grep_files(workspace: Path, pattern: str, path: str | None = None,
               glob: str | None = None, output_mode: OutputMode = "content",
               stop: threading.Event | None = None,
               mounts: ReadOnlyMounts | None = None) -> str:
    """The text Grep returns (see the module docstring for the shapes); "No matches found ..."
    when nothing matches. ``mounts``: the run's read-only mounts, searched under their names
    (``wiki/...``) after the workspace's own files. Raises ToolError for an invalid regex, an
    empty glob, a missing path and anything outside the workspace."""
    regex = _Budgeted(_compile(pattern), SEARCH_BUDGET_S)
    files = _candidates(workspace, path, glob, stop, mounts)
    lines = _report(files, regex, output_mode, stop)
    if not lines:
        return f"No matches found for {pattern!r}."
    if len(lines) > MAX_RESULTS:
        lines[MAX_RESULTS:] = [f"\n[Results stop at {MAX_RESULTS} lines; there are more. "
                               "Narrow the pattern, path or glob.]"]
    return "\n".join(lines)


class _Budgeted:
    """A compiled pattern whose searches share one time budget (seconds)."""

    def __init__(self, pattern: Any, budget_s: float) -> None:
        self.pattern = pattern
        self.deadline = time.monotonic() + budget_s
        self.budget_s = budget_s

    def search(self, text: str) -> Any:
        left = self.deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return self.pattern.search(text, timeout=left, concurrent=True)
        except TimeoutError:
            raise ToolError(
                f"The search took longer than {self.budget_s:g} s and was stopped: the pattern "
                "probably backtracks heavily (e.g. nested repeats like (a+)+). Simplify it or "
                "narrow the path or glob.") from None


def _compile(pattern: str) -> Any:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {e}. Grep uses Python `re` syntax; "
            "escape special characters such as ( [ { . * + ? with a backslash."
        ) from e


def _candidates(workspace: Path, path: str | None, glob: str | None,
                stop: threading.Event | None, mounts: ReadOnlyMounts | None
                ) -> Iterator[tuple[str, Path, Path]]:
    """The files to search, in path order: the workspace-relative path to show (a link's own
    name), the real path to open and the directory it lies in (the workspace or a mount)."""
    target = locate(workspace, path or ".", mounts)
    if not target.real.exists():
        raise ToolError(f"Path not found: {path}")
    if not target.real.is_dir():  # an explicit file is searched whatever the glob says
        return iter([(target.shown, target.real, target.root)])
    keep = _glob_filter(glob)
    return ((shown, real, root) for shown, real, root in walk_view(target, mounts, stop)
            if keep(relative_to_shown(shown, target.shown)))


def _glob_filter(glob: str | None) -> Callable[[str], bool]:
    """A predicate on a relative POSIX path. Like ripgrep's --glob, a pattern without "/"
    matches the file name at any depth."""
    if glob is None:
        return lambda rel: True
    if not glob.strip():
        raise ToolError("The glob is empty; leave it out to search every file.")
    matcher = compile_glob(glob)
    if "/" in glob:
        return lambda rel: matcher.match(rel) is not None
    return lambda rel: matcher.match(rel.rpartition("/")[2]) is not None


def _report(files: Iterator[tuple[str, Path, Path]], regex: _Budgeted,
            mode: OutputMode, stop: threading.Event | None) -> list[str]:
    """Output lines, at most one past :data:`MAX_RESULTS` (so the caller knows there are
    more); stops reading files as soon as it has them."""
    lines: list[str] = []
    for shown, real, root in files:
        hits = _matches(root, real, regex, stop)
        try:
            lines.extend(_file_lines(shown, hits, mode, MAX_RESULTS + 1 - len(lines)))
        finally:
            hits.close()  # closes the file when we stopped reading it early
        if len(lines) > MAX_RESULTS:
            break
    return lines


def _file_lines(shown: str, hits: Iterator[tuple[int, str]], mode: OutputMode,
                room: int) -> list[str]:
    """One file's output lines in ``mode``, at most ``room`` of them."""
    if mode == "content":
        return [f"{shown}:{n}:{_clip(text)}" for n, text in itertools.islice(hits, room)]
    if mode == "count":
        count = sum(1 for _ in hits)
        return [f"{shown}:{count}"] if count else []
    return [shown] if next(hits, None) is not None else []


def _matches(root: Path, real: Path, regex: _Budgeted,
             stop: threading.Event | None) -> Generator[tuple[int, str]]:
    """``(line number, line)`` for each matching line of a text file in ``root``; nothing for
    a binary file or one that cannot be opened (gone, unreadable, swapped for a link)."""
    try:
        f = open_in_workspace(root, real)
    except (OSError, ToolError):
        return
    with f:
        if b"\x00" in f.read(8192):
            return
        f.seek(0)
        for number, raw in enumerate(f, 1):
            if stop is not None and stop.is_set():
                return
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if regex.search(text):
                yield number, text


def _clip(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}… [{len(text) - MAX_LINE_CHARS:,} more characters]"
