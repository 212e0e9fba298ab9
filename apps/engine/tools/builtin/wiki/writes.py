"""WikiWrite and WikiEdit: the agent changes the team wiki, one commit per call.

Writes are never concurrency-safe (each moves ``main``) and need no approval by default: every
change is a commit anyone can revert, and the room sees it as it happens (a ``wiki_changed``
event with links to the page and its diff); a team can still require approval in its tool
policy. A write that would lose someone's change is answered with a conflict the model can act
on: the page as it is now, its blob id, the 3-way merge with conflict markers when there is one,
and what to do next. A refused path or a size limit is an error result, never a crash.
"""

from __future__ import annotations

from typing import Any

from apps.engine.errors import ToolError
from apps.engine.events import WikiChanged
from apps.engine.tools.base import (
    BaseTool,
    Concurrency,
    ToolCategory,
    ToolContext,
    ToolOutput,
    ToolSpec,
)
from apps.engine.tools.builtin.wiki.common import (
    BLOB_PATTERN,
    NOTHING_CHANGED,
    PATH_PARAM,
    clean_arguments,
    cut,
    port_of,
    refusal,
)
from apps.engine.tools.builtin.wiki.port import WikiChange
from apps.engine.wiki import WikiConflict, WikiError

__all__ = ["WikiEditTool", "WikiWriteTool", "conflict_text"]

CONFLICT_CHARS = 12_000
"""Of the current page and of the merged text, at most this much goes back to the model."""

SUMMARY_CHARS = 200
"""A commit subject's length in the store."""

MESSAGE_PARAM = {
    "type": "string", "maxLength": 1000,
    "description": "A one-line summary of the change, shown to the team and kept in the "
                   "page's history (default: \"Update <path>\").",
}


def _spec(name: str, description: str, properties: dict[str, Any],
          required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name, description=description,
        parameters={"type": "object", "properties": properties, "required": required,
                    "additionalProperties": False},
        category=ToolCategory.TEAM, concurrency=Concurrency.NEVER, requires_approval=False,
        timeout_s=90.0)


class _WikiWrite(BaseTool):
    def prepare_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Forgive nulls, a leading ``/``, an upper-case blob id (see ``clean_arguments``)."""
        return clean_arguments(arguments)


class WikiWriteTool(_WikiWrite):
    """``WikiWrite {path, content, expected_blob?, message?}``."""

    spec = _spec("WikiWrite", (
        "Creates or replaces a page of the team wiki (Markdown; the path ends in .md). The "
        "whole team shares the wiki and sees every change in the room, so write down what the "
        "team decided and keep pages tidy.\n\n"
        "- To create a page, leave out expected_blob: the call fails if the page exists.\n"
        "- To replace a page, WikiRead it first and pass its blob id as expected_blob. If "
        "someone changed it since, their change is merged with yours when the two do not "
        "overlap; otherwise you get a conflict with the current text and blob id: re-apply your "
        "change to that text and call again.\n"
        "- For a small change to an existing page, WikiEdit is simpler.\n"
        "- wiki/ in the workspace is a read-only copy: Write and Edit cannot change it."
    ), {
        "path": PATH_PARAM,
        "content": {"type": "string", "description": "The page's complete new text."},
        "expected_blob": {"type": "string", "pattern": BLOB_PATTERN,
                          "description": "The blob id of the page as you read it (WikiRead, "
                                         "WikiList); leave it out to create a new page."},
        "message": MESSAGE_PARAM,
    }, ["path", "content"])

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        args = ctx.arguments
        path, expected = args["path"], args.get("expected_blob")
        created = expected is None
        message = _message(args, "Create" if created else "Update", path)
        try:
            change = await port_of(ctx).write(path, args["content"], expected_blob=expected,
                                              message=message, call_id=ctx.call_id)
        except WikiConflict as e:
            return ToolOutput(conflict_text(e, path, tool="WikiWrite"), is_error=True)
        except WikiError as e:
            raise refusal(e, path, writing=True) from e
        return await _committed(ctx, change, message, created=created)


class WikiEditTool(_WikiWrite):
    """``WikiEdit {path, old_string, new_string, replace_all?, message?}``."""

    spec = _spec("WikiEdit", (
        "Replaces exact text in a page of the team wiki, applied to the page as it is now, so "
        "changes others make meanwhile to other parts of the page are kept.\n\n"
        "- old_string must match the page exactly (WikiRead it and copy the text without the "
        "line-number prefix) and occur once, unless replace_all is true.\n"
        "- new_string must differ from old_string. To create a page, use WikiWrite."
    ), {
        "path": PATH_PARAM,
        "old_string": {"type": "string", "minLength": 1,
                       "description": "The exact text to replace."},
        "new_string": {"type": "string", "description": "The text to put in its place."},
        "replace_all": {"type": "boolean", "default": False,
                        "description": "Replace every occurrence (default false)."},
        "message": MESSAGE_PARAM,
    }, ["path", "old_string", "new_string"])

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        args = ctx.arguments
        path = args["path"]
        if args["old_string"] == args["new_string"]:  # said here: the store names them old, new
            raise ToolError(f"new_string must differ from old_string. {NOTHING_CHANGED}")
        message = _message(args, "Edit", path)
        try:
            change = await port_of(ctx).edit(
                path, args["old_string"], args["new_string"],
                replace_all=args.get("replace_all", False), message=message,
                call_id=ctx.call_id)
        except WikiConflict as e:
            return ToolOutput(conflict_text(e, path, tool="WikiEdit"), is_error=True)
        except WikiError as e:
            raise refusal(e, path, writing=True) from e
        return await _committed(ctx, change, message, created=False)


def _message(args: dict[str, Any], verb: str, path: str) -> str:
    """The commit's subject: one line (the store flattens it too), at most 200 characters."""
    given = " ".join(str(args.get("message", "")).split())[:SUMMARY_CHARS]
    return given or f"{verb} {path}"


async def _committed(ctx: ToolContext, change: WikiChange, message: str, *,
                     created: bool) -> ToolOutput:
    """Tell the room (``wiki_changed``) and the model what was committed; a page that
    already was so is only told to the model (there is no commit to show)."""
    result = change.result
    if not result.changed:
        return ToolOutput(f"{result.path} already had this content: nothing to commit "
                          f"(blob {result.blob}).")
    await ctx.emit(WikiChanged(
        call_id=ctx.call_id, path=result.path, commit=result.commit, author=change.author,
        summary=message, created=created,
        merged=result.merged, page_url=change.page_url, diff_url=change.diff_url,
        diff_page_url=change.diff_page_url))
    verb = "Created" if created else "Updated"
    text = f"{verb} {result.path}: commit {result.commit}, blob {result.blob}."
    if result.merged:
        text += (" Someone else changed the page meanwhile; their change and yours did not "
                 "overlap and were merged. WikiRead the page to see the result.")
    return ToolOutput(text)


def conflict_text(error: WikiConflict, path: str, *, tool: str) -> str:
    """What the model gets back for a conflict: the current page (bounded), its blob id, the
    3-way merge with markers if there is one, and how to retry."""
    parts = [f"Conflict: {error.message.rstrip('.')}. {NOTHING_CHANGED}"]
    current = error.current
    if current is None:
        parts.append(f"{path} does not exist now (it was deleted meanwhile). To create it "
                     "again, call WikiWrite without expected_blob.")
        return "\n\n".join(parts)
    text, was_cut = cut(current.content, CONFLICT_CHARS)
    parts.append(f"The page as it is now (blob {current.blob}, {len(current.content):,} "
                 "characters):\n<current>\n" + text
                 + ("\n[... cut: WikiRead the page for the rest]" if was_cut else "")
                 + "\n</current>")
    if error.merged_text is not None:
        merged, merged_cut = cut(error.merged_text, CONFLICT_CHARS)
        parts.append("Your text merged with it, with conflict markers where the two overlap:\n"
                     "<merged>\n" + merged + ("\n[... cut]" if merged_cut else "")
                     + "\n</merged>")
    retry = ("call WikiEdit again with an old_string taken from the current text" if
             tool == "WikiEdit" else
             f"call WikiWrite again with expected_blob=\"{current.blob}\"")
    parts.append("Re-read the page (WikiRead) if you need more of it, re-apply your intended "
                 f"change to the current text (keep the other person's change), then {retry}.")
    return "\n\n".join(parts)
