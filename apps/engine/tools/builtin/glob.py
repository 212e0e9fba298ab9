"""Glob: workspace files whose path matches a glob pattern, most recently modified first.

Pattern language (the one models know from Claude Code / ripgrep globs): ``*`` and ``?`` match
within one path segment, ``**`` as a whole segment matches any number of directories (none
included), ``[abc]``/``[!abc]`` a character class, ``{a,b}`` alternatives, ``\\`` escapes. ``*``
also matches names that start with a dot. The pattern is matched against the whole path relative
to the search directory, so ``*.py`` matches only at its top level and ``**/*.py`` at any depth.

Only files are listed (directories are not), relative to the workspace root so the model can
pass them straight to Read. The walk skips ``.git`` and ``.confab``, does not follow directory
links, and lists a file link only when it points to a file inside the workspace. Ordering is by
modification time, newest first (ties by path), as Claude Code does: after a change the files
just touched come first, and when there are more than :data:`MAX_RESULTS` the recent ones are
kept.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from apps.engine.errors import ToolError
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.tools.workspace import (
    Located,
    locate,
    relative_to_shown,
    run_stoppable,
    walk_view,
)

__all__ = ["MAX_RESULTS", "GlobTool", "compile_glob", "glob_files", "search_directory"]

MAX_RESULTS = 100

_MAGIC = frozenset("*?[{\\")

DESCRIPTION = f"""\
Finds files by name pattern in the workspace, e.g. "**/*.py" or "src/**/*.{{ts,tsx}}".

- `**` matches any number of directories, `*` and `?` match within one name, `{{a,b}}` matches \
either alternative, `[abc]` one of the characters.
- The pattern is matched against paths relative to `path` (default: the workspace root), so \
"*.py" finds only top-level files; use "**/*.py" to search all directories.
- Returns file paths relative to the workspace root, most recently modified first, at most \
{MAX_RESULTS}.
- .git and .confab are not searched. To search file contents, use Grep."""


class GlobTool(BaseTool):
    """``Glob {pattern, path?}``."""

    spec = ToolSpec(
        name="Glob",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob pattern to match."},
                "path": {"type": "string",
                         "description": "The directory to search in (default: the workspace "
                                        "root)."},
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
        args = ctx.arguments
        workspace, pattern, path = ctx.workspace, args["pattern"], args.get("path")
        mounts = ctx.mounts
        return ToolOutput(await run_stoppable(
            lambda stop: glob_files(workspace, pattern, path, stop, mounts)))


def glob_files(workspace: Path, pattern: str, path: str | None = None,
               stop: threading.Event | None = None,
               mounts: ReadOnlyMounts | None = None) -> str:
    """The listing Glob returns: matching files, one per line, newest first, capped at
    :data:`MAX_RESULTS` with a note; "No files found ..." when none match. ``mounts``: the
    run's read-only mounts, listed under their names (``wiki/...``). Raises ToolError for an
    empty pattern, a ``..`` after the first wildcard, a search path that is not a directory,
    and anything outside the workspace."""
    if not pattern.strip():
        raise ToolError("The pattern is empty; give a glob such as '**/*.py'.")
    search = search_directory(workspace, path, mounts)
    base_spelling, rest = _split_literal_prefix(pattern)
    if ".." in rest.split("/"):
        raise ToolError("'..' may not follow a wildcard in a Glob pattern; use `path` to choose "
                        "the directory to search.")
    base = (locate(workspace, os.path.join(search.shown, base_spelling), mounts)
            if base_spelling else search)
    if not base.real.is_dir():
        return f"No files found matching {pattern!r}."
    matcher = compile_glob(rest or "**")
    found = []
    for shown, real, _ in walk_view(base, mounts, stop):
        if matcher.match(relative_to_shown(shown, base.shown)):
            try:
                found.append((-real.stat().st_mtime_ns, shown))
            except OSError:
                continue  # removed while we walked
    return _listing(sorted(found), pattern)


def search_directory(workspace: Path, path: str | None,
                     mounts: ReadOnlyMounts | None = None) -> Located:
    """The directory to search: ``path`` or the workspace root; ToolError if it is missing
    or not a directory."""
    directory = locate(workspace, path or ".", mounts)
    if not directory.real.exists():
        raise ToolError(f"Directory not found: {path}")
    if not directory.real.is_dir():
        raise ToolError(f"{path} is a file, not a directory; `path` must be a directory.")
    return directory


def _listing(found: list[tuple[int, str]], pattern: str) -> str:
    if not found:
        return f"No files found matching {pattern!r}."
    lines = [shown for _, shown in found[:MAX_RESULTS]]
    if len(found) > MAX_RESULTS:
        lines.append(f"\n[Showing the {MAX_RESULTS} most recently modified of {len(found):,} "
                     "matching files. Use a narrower pattern or path to see the others.]")
    return "\n".join(lines)


def _split_literal_prefix(pattern: str) -> tuple[str, str]:
    """Split off the leading segments without wildcards: they name the directory to walk
    (which also confines an absolute or ``..`` prefix through locate)."""
    segments = pattern.split("/")
    k = 0
    while k < len(segments) - 1 and not _MAGIC.intersection(segments[k]):
        k += 1
    base = "/".join(segments[:k])
    if k and not base:  # the pattern starts with "/" and a wildcard follows at once
        base = "/"
    return base, "/".join(segments[k:])


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex that matches a whole POSIX relative path against ``pattern`` (module docstring
    gives the language). Unbalanced ``[`` or ``{`` are literal characters."""
    structural = _brace_positions(pattern)
    out: list[str] = []
    i = 0
    while i < len(pattern):
        piece, i = _translate_at(pattern, i, structural)
        out.append(piece)
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _translate_at(pattern: str, i: int, structural: set[int]) -> tuple[str, int]:
    """The regex for the glob token at ``i``, and the index after it."""
    c = pattern[i]
    if c == "*":
        return _stars(pattern, i)
    if c == "?":
        return "[^/]", i + 1
    if c == "[":
        end = _class_end(pattern, i)
        if end is not None:
            body = pattern[i + 1:end].replace("\\", "\\\\")
            if body[0] in "!^":
                body = "^" + body[1:]
            return f"[{body}]", end + 1
    if c == "\\" and i + 1 < len(pattern):
        return re.escape(pattern[i + 1]), i + 2
    if i in structural:
        return {"{": "(?:", ",": "|", "}": ")"}[c], i + 1
    return re.escape(c), i + 1


def _stars(pattern: str, i: int) -> tuple[str, int]:
    """``**`` alone in its segment crosses directories; any other run of ``*`` does not."""
    end = i
    while end < len(pattern) and pattern[end] == "*":
        end += 1
    whole_segment = (i == 0 or pattern[i - 1] == "/") and (
        end == len(pattern) or pattern[end] == "/")
    if end - i >= 2 and whole_segment:
        if end < len(pattern):
            return "(?:.*/)?", end + 1  # "**/": zero or more directories
        return ".*", end
    return "[^/]*", end


def _class_end(pattern: str, i: int) -> int | None:
    """Index of the ``]`` closing the class opened at ``i`` (a leading ``]`` is literal)."""
    j = i + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    end = pattern.find("]", j)
    return end if end != -1 else None


def _brace_positions(pattern: str) -> set[int]:
    """Indices of the ``{``, ``,`` and ``}`` that form balanced alternation groups."""
    positions: set[int] = set()
    stack: list[tuple[int, list[int]]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[" and (end := _class_end(pattern, i)) is not None:
            i = end + 1  # braces and commas inside a class are literal
            continue
        if c == "{":
            stack.append((i, []))
        elif c == "," and stack:
            stack[-1][1].append(i)
        elif c == "}" and stack:
            start, commas = stack.pop()
            positions.update([start, i, *commas])
        i += 1
    return positions
