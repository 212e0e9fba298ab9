"""Fakes for runtime tests: tools that record what they did, an inbox, an approval gate."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from apps.engine.events import (
    ContentDelta,
    MessageEnd,
    MessageStart,
    RuntimeEvent,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
from apps.engine.messages import Author, Message, ToolCall, ToolResultBlock, ToolUseBlock, Usage
from apps.engine.ports import ApprovalDecision, Taken
from apps.engine.runtime.runner import AgentRunner, RunConfig
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.registry import ToolRegistry

OBJECT = {"type": "object", "properties": {"text": {"type": "string"}},
          "additionalProperties": False}


class Echo(BaseTool):
    """Returns its text; records each call."""

    spec = ToolSpec(name="Echo", description="echo", parameters=OBJECT,
                    concurrency=Concurrency.ALWAYS)

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        self.calls.append(ctx.arguments.get("text", ""))
        return ToolOutput(content="echo: " + ctx.arguments.get("text", ""))


class Blocker(BaseTool):
    """Sets ``started`` and waits for ``release``; records a cancellation."""

    spec = ToolSpec(name="Blocker", description="waits", parameters=OBJECT,
                    concurrency=Concurrency.NEVER, requires_approval=True)

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolOutput(content="released")


class Inbox:
    """A PendingInbox fed by the test."""

    def __init__(self) -> None:
        self.pending: list[tuple[Message, bool]] = []

    def post(self, author: str, text: str, *, steer: bool = True) -> None:
        """A message from ``author``; ``steer=False``: chat that only waits as context."""
        self.pending.append((Message(role="user", content=text,
                                     author=Author(id=author, name=author)), steer))

    async def take(self) -> Taken:
        taken, self.pending = self.pending, []
        return Taken(messages=[m for m, _ in taken], steer=any(s for _, s in taken))


class Approvals:
    """An ApprovalGate the test answers by setting ``decision``."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer: asyncio.Future[ApprovalDecision] | None = None

    def needs_approval(self, call: ToolCall, default: bool) -> bool:
        return default

    async def request(self, call: ToolCall, reason: str) -> ApprovalDecision:
        self.answer = asyncio.get_running_loop().create_future()
        self.asked.set()
        return await self.answer


def user(text: str, name: str = "alice") -> Message:
    return Message(role="user", content=text, author=Author(id=name, name=name))


def text_turn(*pieces: str, pause: asyncio.Event | None = None, at: int = 1,
              input_tokens: int = 10) -> list[Any]:
    """MessageStart, the pieces (pausing on ``pause`` after piece ``at``), MessageEnd."""
    items: list[Any] = [MessageStart(id="m", model="scripted")]
    for i, piece in enumerate(pieces):
        items.append(ContentDelta(text=piece))
        if pause is not None and i + 1 == at:
            items.append(pause)
    items.append(MessageEnd(usage=Usage(input_tokens=input_tokens, output_tokens=5),
                            stop_reason="end_turn"))
    return items


def call_turn(*calls: tuple[str, dict[str, Any]], tag: str = "t") -> list[Any]:
    """A response that calls tools ``(name, arguments)`` in one batch."""
    items: list[Any] = [MessageStart(id="m", model="scripted")]
    made = []
    for i, (name, arguments) in enumerate(calls):
        call = ToolCall(id=f"call_{tag}{i}", name=name, arguments=arguments, index=i)
        made.append(call)
        items += [ToolCallStart(index=i, id=call.id, name=name), ToolCallReady(call=call)]
    items += [ToolCallsRequested(calls=made),
              MessageEnd(usage=Usage(input_tokens=10, output_tokens=5), stop_reason="tool_use")]
    return items


def runner(provider: Any, tools: list[Any], history: list[Message], tmp_path: Path,
           **kw: Any) -> AgentRunner:
    config = kw.pop("config", None) or RunConfig(model="scripted")
    return AgentRunner(provider, ToolRegistry(tools), config, history, run_id="run-1",
                       workspace=tmp_path, **kw)


def kinds(events: list[RuntimeEvent]) -> list[str]:
    return [e.kind for e in events]


def assert_every_call_answered(history: list[Message]) -> None:
    """The invariant a provider enforces: each tool_use has a tool_result after it."""
    calls = [b.id for m in history for b in m.content if isinstance(b, ToolUseBlock)]
    results = [b.tool_use_id for m in history for b in m.content
               if isinstance(b, ToolResultBlock)]
    assert calls == results, (calls, results)
