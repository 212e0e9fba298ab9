"""What the wiki tools share: the run's port, argument clean-up and the words for refusals."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from apps.engine.errors import ToolError
from apps.engine.tools.base import ToolContext
from apps.engine.tools.builtin.wiki.port import WIKI_SERVICE, WikiPort
from apps.engine.wiki import (
    WikiError,
    WikiInvalid,
    WikiNotFound,
    WikiTooLarge,
    WikiUnavailable,
)

__all__ = ["BLOB_PATTERN", "NOTHING_CHANGED", "PATH_PARAM", "clean_arguments", "cut", "port_of",
           "refusal", "when"]

BLOB_PATTERN = "^[0-9a-f]{40}$"
NOTHING_CHANGED = "Nothing was changed."

PATH_PARAM = {
    "type": "string", "minLength": 1, "maxLength": 255,
    "description": "The page's path in the wiki, e.g. \"Home.md\" or \"ops/Runbook.md\" (not "
                   "the workspace path: \"wiki/Home.md\" in the workspace is \"Home.md\" here).",
}

_HEX_KEYS = ("expected_blob", "rev")


def port_of(ctx: ToolContext) -> WikiPort:
    """The run's wiki; ToolError when the host bound none (a run without a team)."""
    port = ctx.services.get(WIKI_SERVICE)
    if port is None:
        raise ToolError("The team wiki is not available in this run.")
    return port


def clean_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Forgive the usual slips: ``null`` for "not given", a leading ``/`` on a path, numbers
    sent as strings, ids in upper case or with spaces around them."""
    args = {k: v for k, v in arguments.items() if v is not None}
    if "expected_blob_sha" in args and "expected_blob" not in args:  # the name in WIKI.md
        args["expected_blob"] = args.pop("expected_blob_sha")
    path = args.get("path")
    if isinstance(path, str) and path.startswith("/") and path.strip("/"):
        args["path"] = path.lstrip("/")
    for key in _HEX_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            value = value.strip()
            args[key] = value if value.upper() == "HEAD" else value.lower()
    for key in ("offset", "limit"):
        value = args.get(key)
        if (isinstance(value, str) and value.strip().isdigit()) or (
                isinstance(value, float) and value.is_integer()):
            args[key] = int(value)
    return args


def refusal(error: WikiError, path: str | None = None, *, writing: bool) -> ToolError:
    """The store's refusal as a tool error the model can act on (conflicts are answered by the
    write tools themselves). ``writing``: the call would have changed the wiki, so the error
    says that nothing was."""
    message = error.message.rstrip(".") + "."
    if isinstance(error, WikiNotFound):
        hint = " Use WikiList or WikiSearch to find the page's path."
        if path and path.startswith("wiki/"):
            hint += (" Wiki paths start at the wiki's root: \"wiki/Home.md\" in the workspace "
                     "is \"Home.md\" for the wiki tools.")
        return ToolError(message + hint)
    if isinstance(error, WikiUnavailable):
        unchanged = "; nothing was changed" if writing else ""
        return ToolError(f"The wiki is unavailable right now ({error.message.rstrip('.')})"
                         f"{unchanged}. Try again in a moment.")
    if writing and isinstance(error, WikiInvalid | WikiTooLarge):
        return ToolError(message + " " + NOTHING_CHANGED)
    return ToolError(message)


def cut(text: str, limit: int) -> tuple[str, bool]:
    """At most ``limit`` characters of ``text`` and whether it was cut."""
    return (text, False) if len(text) <= limit else (text[:limit], True)


def when(value: datetime) -> str:
    """A timestamp as the model reads it (UTC, to the minute)."""
    return value.strftime("%Y-%m-%d %H:%M UTC")
