"""TodoWrite: the run's task list, which the whole room sees (DESIGN 2.5)."""

from __future__ import annotations

from collections import Counter

from apps.engine.events import TodosUpdated
from apps.engine.tools.base import (
    BaseTool,
    Concurrency,
    ToolCategory,
    ToolContext,
    ToolOutput,
    ToolSpec,
)

__all__ = ["TodoWriteTool"]

STATUSES = ("pending", "in_progress", "completed")


class TodoWriteTool(BaseTool):
    """Replace the task list with ``todos`` (``[{content, status}]``) and show it to the room."""

    spec = ToolSpec(
        name="TodoWrite",
        description=(
            "Create or update the task list for the current work. Send the whole list every "
            "time; it replaces the previous one. Use it for work with several steps: mark a "
            "task in_progress when you start it (one at a time) and completed as soon as it is "
            "done. Everyone in the room sees the list."
        ),
        parameters={
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete, updated task list.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": list(STATUSES)},
                        },
                        "required": ["content", "status"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["todos"],
            "additionalProperties": False,
        },
        category=ToolCategory.PLAN,
        concurrency=Concurrency.NEVER,  # two lists in one batch: the later one wins, in order
        timeout_s=10.0,
    )

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        todos = [{"content": t["content"], "status": t["status"]}
                 for t in ctx.arguments["todos"]]
        ctx.services["todos"] = todos
        await ctx.emit(TodosUpdated(todos=todos))
        counts = Counter(t["status"] for t in todos)
        summary = ", ".join(f"{counts[s]} {s.replace('_', ' ')}" for s in STATUSES if counts[s])
        return ToolOutput(content=f"Task list updated ({summary or 'empty'}).")
