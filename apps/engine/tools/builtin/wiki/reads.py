"""WikiList, WikiRead, WikiSearch and WikiHistory: the team wiki, read-only and concurrency-safe.

The answers are text for the model: every page with its title, last change and blob id (the
``expected_blob`` of a later WikiWrite); a page numbered like Read's output, a range at a time;
matching lines as ``path:line: text``; a page's commits newest first.
"""

from __future__ import annotations

from typing import Any

from apps.engine.tools.base import (
    BaseTool,
    Concurrency,
    ToolCategory,
    ToolContext,
    ToolOutput,
    ToolSpec,
)
from apps.engine.tools.builtin.read import format_line
from apps.engine.tools.builtin.wiki.common import (
    PATH_PARAM,
    clean_arguments,
    port_of,
    refusal,
    when,
)
from apps.engine.wiki import Page, PageInfo, WikiError, is_page

__all__ = ["WikiHistoryTool", "WikiListTool", "WikiReadTool", "WikiSearchTool"]

DEFAULT_LIST = 200
DEFAULT_READ_LINES = 2000
DEFAULT_HITS = 20
QUERY_MAX = 200  # the longest query WikiStore.search takes
DEFAULT_HISTORY = 20
_FOOTER_RESERVE = 300


class _WikiRead(BaseTool):
    def prepare_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Forgive nulls, a leading ``/``, numbers as strings (see ``clean_arguments``)."""
        return clean_arguments(arguments)


def _spec(name: str, description: str, properties: dict[str, Any],
          required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name, description=description,
        parameters={"type": "object", "properties": properties, "required": required,
                    "additionalProperties": False},
        category=ToolCategory.TEAM, concurrency=Concurrency.ALWAYS, timeout_s=60.0)


class WikiListTool(_WikiRead):
    """``WikiList {prefix?, limit?}``."""

    spec = _spec("WikiList", (
        "Lists the team wiki's pages (and attachments under _files/), sorted by path, each with "
        "its title, when and by whom it last changed, and its blob id. prefix limits the list "
        "to paths starting with it (e.g. \"ops/\")."
    ), {
        "prefix": {"type": "string", "maxLength": 255,
                   "description": "Only paths starting with this (default: every page)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000,
                  "description": f"At most this many entries (default {DEFAULT_LIST})."},
    }, [])

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        prefix = ctx.arguments.get("prefix", "")
        limit = ctx.arguments.get("limit", DEFAULT_LIST)
        try:
            files = await port_of(ctx).list(prefix)
        except WikiError as e:
            raise refusal(e, writing=False) from e
        if not files:
            where = f" under {prefix!r}" if prefix else ""
            return ToolOutput(f"The wiki has no pages{where} yet. Create one with WikiWrite.")
        lines = [_list_line(info) for info in files[:limit]]
        noun = "file" if len(files) == 1 else "files"
        head = f"{len(files):,} {noun} in the wiki" + (f" under {prefix!r}" if prefix else "")
        if len(files) > limit:
            head += f" (showing the first {limit:,}; pass a prefix or a larger limit)"
        return ToolOutput(head + ":\n" + "\n".join(lines))


def _list_line(info: PageInfo) -> str:
    what = f"\"{info.title}\"" if is_page(info.path) else f"attachment, {info.size:,} bytes"
    return (f"- {info.path} — {what} · updated {when(info.updated_at)} by {info.updated_by} "
            f"· blob {info.blob}")


class WikiReadTool(_WikiRead):
    """``WikiRead {path, offset?, limit?, rev?}``."""

    spec = _spec("WikiRead", (
        "Reads a page of the team wiki, numbered like Read (line number, tab, line), up to 2000 "
        "lines at a time: for a long page pass offset (the 1-based line to start at) and limit. "
        "The header gives the page's blob id: pass it as expected_blob to WikiWrite when you "
        "replace the page. The line numbers are not part of the page: leave them out of "
        "WikiEdit's old_string. rev reads the page as it was at an earlier commit (see "
        "WikiHistory)."
    ), {
        "path": PATH_PARAM,
        "offset": {"type": "integer", "minimum": 1,
                   "description": "The 1-based line number to start reading at."},
        "limit": {"type": "integer", "minimum": 1,
                  "description": f"How many lines to read (default {DEFAULT_READ_LINES})."},
        "rev": {"type": "string", "pattern": "^([0-9a-f]{40}|HEAD)$",
                "description": "A commit id (40 hex digits) to read an older version; "
                               "default: the current one."},
    }, ["path"])

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        args = ctx.arguments
        try:
            page = await port_of(ctx).read(args["path"], args.get("rev", "HEAD"))
        except WikiError as e:
            raise refusal(e, args["path"], writing=False) from e
        return ToolOutput(_numbered(page, args.get("offset", 1),
                                    args.get("limit", DEFAULT_READ_LINES),
                                    ctx.env.max_result_chars))


def _numbered(page: Page, offset: int, limit: int, max_chars: int) -> str:
    lines = page.content.splitlines()
    total = len(lines)
    head = f"[wiki page {page.path} · blob {page.blob} · commit {page.commit} · {total:,} lines]"
    if total == 0:
        return head + "\n(the page is empty)"
    if offset > total:
        return head + f"\n[offset {offset} is past the end: the page has {total:,} lines.]"
    budget = max(max_chars - len(head) - _FOOTER_RESERVE, 1)
    shown: list[str] = []
    used = 0
    last = offset - 1
    for number in range(offset, min(total, offset + limit - 1) + 1):
        line = format_line(number, lines[number - 1])
        if shown and used + len(line) + 1 > budget:
            break
        shown.append(line)
        used += len(line) + 1
        last = number
    text = head + "\n" + "\n".join(shown)
    if last < total:
        text += (f"\n\n[Showing lines {offset}-{last} of {total:,}. Call WikiRead with "
                 f"offset={last + 1} to continue.]")
    return text


class WikiSearchTool(_WikiRead):
    """``WikiSearch {query, limit?}``."""

    spec = _spec("WikiSearch", (
        "Searches the team wiki's pages for a text, literally and ignoring case (not a regular "
        "expression; CJK text works). Returns matching lines as path:line: text. Read a page "
        "with WikiRead for its context."
    ), {
        "query": {"type": "string", "minLength": 1, "maxLength": QUERY_MAX,
                  "description": "The text to find."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                  "description": f"At most this many lines (default {DEFAULT_HITS})."},
    }, ["query"])

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        query = ctx.arguments["query"]
        limit = ctx.arguments.get("limit", DEFAULT_HITS)
        try:
            hits = await port_of(ctx).search(query, limit=limit)
        except WikiError as e:
            raise refusal(e, writing=False) from e
        if not hits:
            return ToolOutput(f"No wiki page contains {query!r}.")
        lines = [f"{hit.path}:{hit.line}: {hit.snippet}" for hit in hits[:limit]]
        if len(hits) >= limit:
            lines.append(f"\n[Results stop at {limit} lines; there may be more. Use a more "
                         "specific query or a larger limit.]")
        return ToolOutput("\n".join(lines))


class WikiHistoryTool(_WikiRead):
    """``WikiHistory {path, limit?}``."""

    spec = _spec("WikiHistory", (
        "Lists the commits that changed a page of the team wiki, newest first (renames "
        "followed): commit id, time, author and summary. WikiRead with rev=<commit> shows the "
        "page as it was then."
    ), {
        "path": PATH_PARAM,
        "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                  "description": f"At most this many commits (default {DEFAULT_HISTORY})."},
    }, ["path"])

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        path = ctx.arguments["path"]
        try:
            entries = await port_of(ctx).history(path, limit=ctx.arguments.get(
                "limit", DEFAULT_HISTORY))
        except WikiError as e:
            raise refusal(e, path, writing=False) from e
        if not entries:
            return ToolOutput(f"{path} has no history: no commit changed it.")
        lines = []
        for entry in entries:
            c = entry.commit
            line = f"- {c.commit} · {when(c.date)} · {c.author_name} — {c.subject}"
            if entry.path != path:
                line += f" (then named {entry.path})"
            lines.append(line)
        return ToolOutput(f"History of {path}, newest first:\n" + "\n".join(lines))
