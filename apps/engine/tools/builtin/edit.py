"""Edit: replace an exact piece of text in a workspace file.

The match is exact (no regex, no whitespace folding) and must be unique unless ``replace_all``
is set, so an edit never lands somewhere the model did not mean. One convenience: in a file
whose lines all end in CRLF, the model's LF text matches and the file keeps its CRLF endings
(models copy text from Read's output, where the CR is invisible).
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from apps.engine.errors import ToolError
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.builtin.read import format_line, looks_binary, open_existing
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.tools.workspace import locate, open_in_workspace

__all__ = ["EditTool", "edit_file"]

SNIPPET_CONTEXT = 3  # unchanged lines shown before and after the change
SNIPPET_MAX_LINES = 40

_READ_PREFIX = re.compile(r"^\s*\d+\t", re.MULTILINE)

DESCRIPTION = """\
Replaces exact text in a workspace file. file_path is relative to the workspace root (an \
absolute path inside the workspace also works).

- old_string must match the file exactly, including whitespace and indentation. Read the file \
first and copy the text from it, without the line-number prefix (number and tab) Read adds.
- old_string must occur exactly once, unless replace_all is true. If it occurs more often, add \
surrounding lines to make it unique, or set replace_all to replace every occurrence (e.g. to \
rename a variable).
- new_string must differ from old_string. To create a file, use Write."""


class EditTool(BaseTool):
    """``Edit {file_path, old_string, new_string, replace_all?}``."""

    spec = ToolSpec(
        name="Edit",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The file to change."},
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {"type": "boolean", "default": False,
                                "description": "Replace every occurrence (default false)."},
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": False,
        },
        concurrency=Concurrency.NEVER,
        requires_approval=True,
    )

    def prepare_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Drop ``null`` values, which some models send for "not given"."""
        return {k: v for k, v in arguments.items() if v is not None}

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        args = ctx.arguments
        message = await asyncio.to_thread(
            edit_file, ctx.workspace, args["file_path"], args["old_string"],
            args["new_string"], replace_all=args.get("replace_all", False), mounts=ctx.mounts,
        )
        return ToolOutput(message)


def edit_file(workspace: Path, file_path: str, old: str, new: str, *,
              replace_all: bool = False, mounts: ReadOnlyMounts | None = None) -> str:
    """Replace ``old`` by ``new`` in ``file_path``; a summary and the changed lines, numbered.

    Raises ToolError when ``old`` is empty or equal to ``new``, is not found, or is found more
    than once without ``replace_all``, for a missing, binary or non-UTF-8 file, and for a
    path under a read-only mount (``wiki/``).
    """
    if old == new:
        raise ToolError("old_string and new_string are identical, so there is nothing to change.")
    if not old:
        raise ToolError(
            "old_string is empty. Give the exact text to replace (Read the file to copy it); "
            "to create a file or replace all of it, use Write."
        )
    where = locate(workspace, file_path, mounts, write=True)
    path, shown = where.real, where.shown
    content = _load_text(workspace, path, shown)
    crlf = _all_crlf(content)
    if crlf:
        content, old, new = (s.replace("\r\n", "\n") for s in (content, old, new))
    start, count = _find_target(content, old, shown, replace_all)
    updated = content.replace(old, new, -1 if replace_all else 1)
    _save_text(workspace, path, shown, updated.replace("\n", "\r\n") if crlf else updated)
    what = f"{count} occurrences" if count > 1 else "1 occurrence"
    return f"Edited {shown}: replaced {what}.\n" + _snippet(updated, start, new)


def _find_target(content: str, old: str, shown: str, replace_all: bool) -> tuple[int, int]:
    """Where ``old`` first occurs and how many times; ToolError if never, or ambiguous."""
    count = content.count(old)
    if count == 0:
        raise ToolError(_not_found_message(content, old, shown))
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}. Add surrounding lines to old_string "
            "so that it matches exactly one place, or set replace_all to true to replace "
            "every occurrence."
        )
    return content.index(old), count


def _not_found_message(content: str, old: str, shown: str) -> str:
    message = (f"old_string was not found in {shown}. It must match the file exactly, "
               "including whitespace and indentation; Read the file and copy the text.")
    if _READ_PREFIX.search(old):
        message += (" It seems to include Read's line-number prefixes (number and tab): "
                    "leave those out.")
    elif old.strip() and old.strip() in content:
        message += " The text matches when leading and trailing whitespace is ignored."
    return message


def _all_crlf(content: str) -> bool:
    """Whether the file has line breaks and every one of them is CRLF."""
    return "\r\n" in content and "\n" not in content.replace("\r\n", "")


def _load_text(workspace: Path, path: Path, shown: str) -> str:
    with open_existing(workspace, path, shown) as f:
        data = f.read()
    if looks_binary(data[:8192]):
        raise ToolError(f"{shown} looks like a binary file; Edit changes UTF-8 text only.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolError(f"{shown} is not valid UTF-8 text ({e.reason} at byte {e.start}); "
                        "Edit changes UTF-8 text only.") from e


def _save_text(workspace: Path, path: Path, shown: str, text: str) -> None:
    try:
        with open_in_workspace(workspace, path, write=True) as f:
            f.write(text.encode("utf-8"))
    except OSError as e:
        raise ToolError(f"Cannot write {shown}: {e.strerror or e}.") from e


def _snippet(updated: str, start: int, new: str) -> str:
    """The changed lines with a few around them, numbered like Read's output."""
    lines = updated.split("\n")
    if updated.endswith("\n"):
        lines.pop()  # the empty string after the final newline is not a line
    first = updated.count("\n", 0, start)  # 0-based line of the change
    last = first + max(new.count("\n") - new.endswith("\n"), 0)  # a final "\n" ends a line
    lo = max(0, first - SNIPPET_CONTEXT)
    hi = min(len(lines), last + SNIPPET_CONTEXT + 1, lo + SNIPPET_MAX_LINES)
    shown = [format_line(i + 1, lines[i]) for i in range(lo, hi)]
    if hi < last + 1:
        shown.append(f"[... the change continues to line {last + 1}]")
    return "\n".join(shown)
