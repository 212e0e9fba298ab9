"""One step of the ReAct loop: a model call, its stream, and its tool calls (DESIGN 2.4).

:class:`StepRun` streams one response. Each provider event is folded into the assistant message
(MessageAssembler) and forwarded as runtime events; each ``ToolCallReady`` goes to the streaming
executor at once, so tools run while the model is still writing. The assistant message joins the
history *before* anything branches on it; then the tool results follow as one ``tool`` message.
A cancelled or broken step is closed the same way, so every tool call in the history has its
result and the next run can send it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

from apps.engine.events import (
    ChatStreamEvent,
    ContentDelta,
    MessageEnd,
    MessageEnded,
    MessageStarted,
    ReasoningDelta,
    ReasoningDeltaEvent,
    Retrying,
    RetryingEvent,
    RuntimeEvent,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallDelta,
    ToolCallReady,
    ToolCallReadyEvent,
    ToolCallStart,
    ToolCallStarted,
)
from apps.engine.messages import ChatRequest, Message, ToolCall, ToolResultBlock, Usage
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.base import AiProvider
from apps.engine.tools.executor import StreamingToolExecutor

__all__ = ["StepRun", "new_message_id"]

Emit = Callable[[RuntimeEvent], Awaitable[None]]


def new_message_id() -> str:
    """A fresh id for a message of the run."""
    return f"msg_{uuid.uuid4().hex[:24]}"


@dataclass(slots=True)
class StepRun:
    """The state of one model call. ``history`` is the run's history (appended to in place)."""

    provider: AiProvider
    executor: StreamingToolExecutor
    history: list[Message]
    emit: Emit
    message_id: str = field(default_factory=new_message_id)
    assembler: MessageAssembler = field(init=False)
    started: bool = False  # a message_started event went out
    appended: bool = False  # the assistant message is in the history
    closed: bool = False  # the tool results are in the history too
    usage: Usage | None = None

    def __post_init__(self) -> None:
        self.assembler = MessageAssembler(self.provider.protocol)  # type: ignore[arg-type]

    @property
    def calls(self) -> list[ToolCall]:
        """The complete tool calls of this response so far."""
        return self.assembler.tool_calls

    async def stream(self, request: ChatRequest) -> None:
        """Stream the response into the assembler, forwarding events; raises ProviderError."""
        async with aclosing(self.provider.stream_chat(request)) as events:
            async for event in events:
                self.assembler.feed(event)
                await self._forward(event)

    async def _forward(self, event: ChatStreamEvent) -> None:
        mid = self.message_id
        match event:
            case ContentDelta(text=text):
                await self._start()
                await self.emit(TextDelta(message_id=mid, text=text))
            case ReasoningDelta(text=text):
                await self._start()
                await self.emit(ReasoningDeltaEvent(message_id=mid, text=text))
            case ToolCallStart(index=index, name=name):
                await self._start()
                await self.emit(ToolCallStarted(message_id=mid, index=index, name=name))
            case ToolCallDelta(index=index, arguments_delta=delta):
                await self.emit(ToolCallArgumentsDelta(message_id=mid, index=index,
                                                       arguments_delta=delta))
            case ToolCallReady(call=call):
                await self._start()
                await self.emit(ToolCallReadyEvent(message_id=mid, index=call.index, call=call))
                self.executor.add(call)
            case Retrying():
                await self.emit(RetryingEvent(attempt=event.attempt,
                                              max_attempts=event.max_attempts,
                                              delay_s=event.delay_s, error_kind=event.kind,
                                              message=event.message))
            case MessageEnd(usage=usage):
                self.usage = usage
            case _:
                pass  # signatures, citations, server tools: they live in the message itself

    async def _start(self) -> None:
        if not self.started:
            self.started = True
            await self.emit(MessageStarted(message_id=self.message_id))

    async def append_message(self, status: str = "complete") -> Message | None:
        """Put the assistant message into the history (once) and announce it; None when the
        response had no content at all (nothing is appended then)."""
        if self.appended:
            return None
        self.appended = True
        message = self.assembler.message(status=status)  # type: ignore[arg-type]
        ended = MessageEnded(message_id=self.message_id, message=message,
                             status=status, usage=self.usage)  # type: ignore[arg-type]
        if not message.content and not message.reasoning_content:
            if self.started:
                await self.emit(ended)
            return None
        self.history.append(message)
        await self._start()
        await self.emit(ended)
        return message

    async def append_results(self, results: list[ToolResultBlock]) -> None:
        """Put the tool results into the history as one ``tool`` message (once)."""
        if self.closed or not results:
            self.closed = True
            return
        self.closed = True
        message = Message(role="tool", content=results)
        self.history.append(message)
        await self.emit(MessageEnded(message_id=new_message_id(), message=message))

    async def close_interrupted(self, status: str) -> None:
        """End a step that was cancelled or broke: keep the partial message marked ``status``,
        abort running tools and record a result for every call in the history."""
        results = await self.executor.abort("cancelled" if status == "cancelled" else "aborted")
        await self.append_message(status)
        await self.append_results(results)
