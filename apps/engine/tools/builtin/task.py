"""Task: a sub-agent with its own history and a subset of the tools (DESIGN 2.5).

The sub-agent runs in the parent's workspace under the same approval policy; its events reach
the room nested under the Task call (``subagent_event``), and its final answer is the result.
"""

from __future__ import annotations

from apps.engine.errors import ToolError
from apps.engine.events import SubagentEvent
from apps.engine.messages import Message
from apps.engine.tools.base import (
    BaseTool,
    Concurrency,
    ToolCategory,
    ToolContext,
    ToolOutput,
    ToolSpec,
)

__all__ = ["TaskTool"]


class TaskTool(BaseTool):
    """Run ``prompt`` in a fresh sub-agent; ``ctx.services["subagent"](prompt)`` builds it
    (AgentRunner provides that factory)."""

    spec = ToolSpec(
        name="Task",
        description=(
            "Launch a sub-agent for a self-contained piece of work (a search across many files, "
            "a focused investigation). It starts with no knowledge of this conversation: the "
            "prompt must say everything it needs and what to report back. Several Task calls in "
            "one response run in parallel. Its final message is returned to you."
        ),
        parameters={
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A 3-5 word summary."},
                "prompt": {"type": "string", "minLength": 1,
                           "description": "The complete task for the sub-agent."},
            },
            "required": ["description", "prompt"],
            "additionalProperties": False,
        },
        category=ToolCategory.AGENT,
        concurrency=Concurrency.ALWAYS,
        timeout_s=None,  # bounded by the sub-agent's own iteration cap
    )

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        factory = ctx.services.get("subagent")
        if factory is None:
            raise ToolError("Sub-agents are not available in this context.")
        child = factory(ctx.arguments["prompt"])
        async for event in child.events():
            await ctx.emit(SubagentEvent(parent_call_id=ctx.call_id, event=event))
        answer = _last_text(child.history)
        if child.status != "completed":
            return ToolOutput(content=f"The sub-agent stopped before finishing "
                                      f"({child.status}). Its last message: {answer or '(none)'}",
                              is_error=True)
        return ToolOutput(content=answer or "(the sub-agent finished without a message)")


def _last_text(history: list[Message]) -> str:
    for message in reversed(history):
        if message.role == "assistant" and message.text():
            return message.text()
    return ""
