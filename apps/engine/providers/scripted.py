"""ScriptedProvider: a deterministic in-process provider for tests and offline runs.

It answers in one of two ways:

- ``turns``: an explicit list, one entry per request, each a list of items played in order: a
  ChatStreamEvent is yielded, an exception is raised, an ``asyncio.Event`` is awaited (a test
  pauses the stream there), a plain callable is called (a test is told "we got here");
- otherwise the script format of :mod:`apps.engine.providers.script` read from the history (the
  same rules the fakellm server follows), and without a script a short fixed text (a title
  request, :mod:`apps.engine.titles`, gets the first words of the first message).

Every request it receives is kept in ``requests`` so tests can check what the loop sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from apps.engine.errors import ProviderError
from apps.engine.events import (
    ChatStreamEvent,
    Citation,
    ContentDelta,
    GroundingMetadata,
    MessageEnd,
    MessageStart,
    ReasoningDelta,
    ThinkingSignature,
    ToolCallDelta,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
from apps.engine.messages import ChatRequest, Protocol, ToolCall, Usage
from apps.engine.providers.base import ModelInfo
from apps.engine.providers.classify import classify_error
from apps.engine.providers.script import ScriptPlayer, Step, pieces
from apps.engine.titles import offline_title

__all__ = ["OFFLINE_REPLY", "ScriptedProvider", "script_events"]

OFFLINE_REPLY = ("I am confab's offline scripted model: I answer without a real language model. "
                 'Send {"script": [...]} to make me think, write or call tools.')

TurnItem = ChatStreamEvent | BaseException | asyncio.Event | Callable[[], Any]


class ScriptedProvider:
    """An AiProvider that plays ``turns`` or the script in the history (see the module doc)."""

    def __init__(self, turns: Sequence[Sequence[TurnItem]] | None = None, *,
                 protocol: Protocol = "anthropic", model: str = "scripted") -> None:
        self.protocol: Protocol = protocol
        self.model = model
        self.requests: list[ChatRequest] = []
        self._turns = list(turns) if turns is not None else None
        self._player = ScriptPlayer()

    async def stream_chat(self, request: ChatRequest) -> AsyncIterator[ChatStreamEvent]:
        """Play the next turn; raises ProviderError where the turn or script says so."""
        self.requests.append(request)
        for item in self._next_items(request):
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, asyncio.Event):
                await item.wait()
            elif callable(item) and not hasattr(item, "type"):
                item()
            else:
                yield item  # type: ignore[misc]

    def _next_items(self, request: ChatRequest) -> Sequence[TurnItem]:
        n = len(self.requests) - 1
        if self._turns is not None:
            if n >= len(self._turns):
                raise AssertionError(f"ScriptedProvider got request {n + 1} but has "
                                     f"{len(self._turns)} turns")
            return self._turns[n]
        played = self._player.play(request.messages)
        if played is None:
            text = offline_title(request.messages) or OFFLINE_REPLY
            return script_events([{"text": text}], None, self.protocol, n)
        steps, error = played
        return script_events(steps, error, self.protocol, n)

    async def list_models(self) -> list[ModelInfo]:
        """The one model it plays."""
        return [ModelInfo(id=self.model, display_name="Offline scripted model",
                          context_window=200_000, max_output_tokens=8192)]

    async def aclose(self) -> None:
        """Nothing to close."""


def script_events(steps: list[Step], error: Step | None, protocol: str, n: int
                  ) -> list[TurnItem]:
    """The ChatStreamEvents of a script segment, ending in ``error`` when one closes it."""
    if error is not None and not error["error"].get("in_stream", False):
        return [_error(error, in_stream=False)]
    items: list[TurnItem] = [MessageStart(id=f"msg_scripted_{n}", model="scripted")]
    calls: list[ToolCall] = []
    output = 0
    for step in steps:
        kind, value = next(iter(step.items()))
        output += len(json.dumps(value)) // 4 + 1
        if kind == "thinking":
            items.append(ReasoningDelta(text=value))
            if protocol == "anthropic":
                items.append(ThinkingSignature(signature=f"scripted-signature-{n}"))
        elif kind == "text":
            items.extend(ContentDelta(text=piece) for piece in pieces(value))
        elif kind == "sources":
            items.extend(_cited(value, protocol))
        elif kind == "tool_call":
            call = ToolCall(id=f"call_s{n}_{len(calls)}", provider_id=f"call_s{n}_{len(calls)}",
                            name=value["name"], arguments=value.get("arguments", {}),
                            index=len(calls))
            items += [ToolCallStart(index=call.index, id=call.id, name=call.name),
                      ToolCallDelta(index=call.index, arguments_delta=json.dumps(call.arguments)),
                      ToolCallReady(call=call)]
            calls.append(call)
    if error is not None:
        return [*items, _error(error, in_stream=True)]
    if calls:
        items.append(ToolCallsRequested(calls=calls))
    items.append(MessageEnd(usage=Usage(input_tokens=0, output_tokens=output),
                            stop_reason="tool_use" if calls else "end_turn"))
    return items


def _cited(found: list[dict[str, Any]], protocol: str) -> list[TurnItem]:
    """A ``sources`` step as the protocol's adapter would surface it (see fakellm's wire)."""
    if protocol == "gemini":
        return [GroundingMetadata({"groundingChunks": [
            {"web": {"uri": s["url"], "title": s.get("title", "")}} for s in found]})]
    if protocol == "anthropic":
        return [Citation(citation={"type": "web_search_result_location", "url": s["url"],
                                   "title": s.get("title", ""), "cited_text": ""})
                for s in found]
    return [Citation(citation={"type": "url_citation", "url_citation": {
        "url": s["url"], "title": s.get("title", "")}}) for s in found]


def _error(step: Step, *, in_stream: bool) -> ProviderError:
    status = int(step["error"].get("status", 500))
    body = {"error": {"message": step["error"].get("message", f"scripted error {status}")}}
    return classify_error(body, provider="scripted", status=status, in_stream=in_stream)
