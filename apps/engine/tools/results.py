"""Large tool results: stored in the workspace, a preview for the model (DESIGN 2.5).

A result longer than ``ToolEnvironment.max_result_chars`` would crowd the context window, so the
full text goes to ``<workspace>/.confab/results/<call_id>.txt`` and the model receives the first
lines, the last lines (command output tends to end with the part that matters: the error, the
summary) and the relative path, which Read (with offset/limit) and Grep accept.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path

from apps.engine.errors import ToolError
from apps.engine.tools.base import DEFAULT_MAX_RESULT_CHARS
from apps.engine.tools.workspace import display_path, open_in_workspace, resolve_path

__all__ = ["LARGE_RESULT_NOTE", "RESULTS_DIR", "store_if_large"]

RESULTS_DIR = ".confab/results"
"""Where stored results live, relative to the workspace."""

LARGE_RESULT_NOTE = (
    f"A result over {DEFAULT_MAX_RESULT_CHARS:,} characters is saved whole in the workspace "
    f"under {RESULTS_DIR}/ and you get its beginning, its end and the file's path: Read it with "
    "offset/limit, or Grep it, for the rest.")
"""What tool descriptions tell the model about long results (the executor's default limit)."""

_PREVIEW_MAX_CHARS = 4_000  # head + tail together, before the header
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")


async def store_if_large(workspace: Path, call_id: str, text: str, limit: int) -> str:
    """``text`` itself when it has at most ``limit`` characters; otherwise store it and return
    a preview that names the stored file (a workspace-relative path).

    The file is ``.confab/results/<call_id>.txt`` (an id that is not a plain token is replaced
    by a hash of it), UTF-8, overwritten if present. Never raises for a storage failure (a full
    disk, a planted link): the preview then says the full text could not be kept.
    """
    if len(text) <= limit:
        return text
    try:
        rel = await asyncio.to_thread(_store, workspace, call_id, text)
    except (OSError, ToolError) as e:
        header = (f"[Output too large ({len(text):,} characters) and it could not be saved "
                  f"({e}); showing the beginning and the end only.]")
        return header + "\n\n" + _preview(text, min(limit, _PREVIEW_MAX_CHARS))
    lines = text.count("\n") + (not text.endswith("\n"))
    header = (
        f"[Output too large ({len(text):,} characters, {lines:,} lines). The full output is "
        f"saved to {rel}; Read it with offset/limit, or Grep it, to see the rest.]"
    )
    return header + "\n\n" + _preview(text, min(limit, _PREVIEW_MAX_CHARS))


def _store(workspace: Path, call_id: str, text: str) -> str:
    """Write ``text`` below the results directory; the workspace-relative path."""
    name = call_id if _SAFE_ID.fullmatch(call_id) else _hashed(call_id)
    # The agent can write into .confab too; resolve_path + open_in_workspace keep a planted
    # link from redirecting this host-side write outside the workspace.
    path = resolve_path(workspace, f"{RESULTS_DIR}/{name}.txt")
    with open_in_workspace(workspace, path, write=True, create_parents=True) as f:
        f.write(text.encode("utf-8", errors="replace"))
    return display_path(workspace, path)


def _hashed(call_id: str) -> str:
    return "call-" + hashlib.sha256(call_id.encode("utf-8", errors="replace")).hexdigest()[:32]


def _preview(text: str, budget: int) -> str:
    """About two thirds of ``budget`` from the head and one third from the tail, on line
    boundaries where a line boundary is near, with a marker saying what was left out."""
    head = _cut_head(text, budget * 2 // 3)
    tail = _cut_tail(text, budget - len(head))
    omitted = text[len(head):len(text) - len(tail)]
    if not omitted:
        return text
    breaks = omitted.count("\n")
    marker = f"\n[... {len(omitted):,} characters, {breaks:,} line breaks omitted ...]\n"
    return head + marker + tail


def _cut_head(text: str, size: int) -> str:
    head = text[:size]
    cut = head.rfind("\n")
    # Keep whole lines unless that would throw away most of the budget (one huge line).
    return head[:cut + 1] if cut >= size // 2 else head


def _cut_tail(text: str, size: int) -> str:
    if size <= 0:
        return ""
    tail = text[-size:]
    cut = tail.find("\n")
    return tail[cut + 1:] if 0 <= cut < size // 2 else tail
