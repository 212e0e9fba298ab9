"""AskUser: the run asks the room a question and waits for someone to answer (DESIGN 2.5)."""

from __future__ import annotations

import asyncio

from apps.engine.errors import ToolError
from apps.engine.events import AwaitingInput, InputReceived
from apps.engine.tools.base import (
    BaseTool,
    Concurrency,
    ToolCategory,
    ToolContext,
    ToolOutput,
    ToolSpec,
)

__all__ = ["AskUserTool"]


class AskUserTool(BaseTool):
    """Ask ``question``; the answer (and who gave it) is the result. Waits at most
    ``env.ask_timeout_s``; no answer by then is reported to the model, not raised."""

    spec = ToolSpec(
        name="AskUser",
        description=(
            "Ask the people in the room a question and wait for one of them to answer. Use it "
            "when you cannot go on without a decision or a fact only they have; do not use it "
            "for confirmation of routine steps."
        ),
        parameters={
            "type": "object",
            "properties": {"question": {"type": "string", "minLength": 1}},
            "required": ["question"],
            "additionalProperties": False,
        },
        category=ToolCategory.TEAM,
        concurrency=Concurrency.NEVER,  # one question at a time keeps the room's view simple
        timeout_s=None,  # people are slow: the wait has its own limit below
    )

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        if ctx.inputs is None:
            raise ToolError("No one can be asked here: answer from what you know, or stop.")
        question = ctx.arguments["question"]
        await ctx.emit(AwaitingInput(question_id=ctx.call_id, question=question))
        try:
            async with asyncio.timeout(ctx.env.ask_timeout_s):
                answer = await ctx.inputs.ask(ctx.call_id, question)
        except TimeoutError:
            await ctx.emit(InputReceived(question_id=ctx.call_id, answer=""))
            return ToolOutput(content=f"No one answered within {ctx.env.ask_timeout_s:g} s. "
                                      "Decide without the answer, or say what you need.")
        await ctx.emit(InputReceived(question_id=ctx.call_id, answer=answer.text,
                                     answered_by=answer.answered_by))
        who = answer.answered_by or "someone"
        return ToolOutput(content=f"{who} answered: {answer.text}")
