"""Write: create or overwrite a workspace file with the given text (UTF-8)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from apps.engine.errors import ToolError
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.tools.workspace import locate, open_in_workspace

__all__ = ["WriteTool", "write_text"]

DESCRIPTION = """\
Writes a file in the workspace, replacing it if it exists. file_path is relative to the \
workspace root (an absolute path inside the workspace also works); missing parent directories \
are created.

- To change part of an existing file, prefer Edit: it sends only the change.
- Read an existing file before overwriting it, so nothing in it is lost by accident.
- content is written exactly as given (UTF-8)."""


class WriteTool(BaseTool):
    """``Write {file_path, content}``."""

    spec = ToolSpec(
        name="Write",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The file to write."},
                "content": {"type": "string", "description": "The complete new content."},
            },
            "required": ["file_path", "content"],
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
            write_text, ctx.workspace, args["file_path"], args["content"], ctx.mounts
        )
        return ToolOutput(message)


def write_text(workspace: Path, file_path: str, content: str,
               mounts: ReadOnlyMounts | None = None) -> str:
    """Write ``content`` to ``file_path``; "Created ..." or "Updated ..." with the byte count.
    Raises ToolError for a directory, a path outside the workspace, a path under a read-only
    mount (``wiki/``) or an OS failure."""
    where = locate(workspace, file_path, mounts, write=True)
    path, shown = where.real, where.shown
    existed = path.exists()
    data = content.encode("utf-8")
    try:
        with open_in_workspace(workspace, path, write=True, create_parents=True) as f:
            f.write(data)
    except IsADirectoryError as e:
        raise ToolError(f"{shown} is a directory; give the path of a file to write.") from e
    except OSError as e:
        raise ToolError(f"Cannot write {shown}: {e.strerror or e}.") from e
    verb = "Updated" if existed else "Created"
    return f"{verb} {shown} ({len(data):,} bytes)."
