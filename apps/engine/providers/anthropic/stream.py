"""Translate an Anthropic Messages stream into ChatStreamEvents
(https://platform.claude.com/docs/en/build-with-claude/streaming).

Event flow: ``message_start``, then per content block ``content_block_start``,
``content_block_delta``\\*, ``content_block_stop``; then ``message_delta`` (stop_reason, final
usage) and ``message_stop``. ``ping`` may come anywhere; ``error`` ends the stream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import (
    ChatStreamEvent,
    Citation,
    ContentDelta,
    MessageEnd,
    MessageStart,
    ReasoningDelta,
    RedactedThinking,
    ServerToolBlockEvent,
    ThinkingSignature,
    ToolCallDelta,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
from apps.engine.messages import ToolCall, Usage
from apps.engine.providers.base import new_tool_call_id, parse_tool_arguments
from apps.engine.providers.classify import classify_error
from apps.engine.providers.sse import SSEEvent

__all__ = ["AnthropicTranslator", "normalize_usage"]

PROTOCOL = "anthropic"


@dataclass(slots=True)
class _Block:
    """One open content block: its ``content_block_start`` object and accumulated pieces."""

    index: int
    raw: dict[str, Any]
    json_parts: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)

    @property
    def type(self) -> str:
        return str(self.raw.get("type", ""))


class AnthropicTranslator:
    """Translates one Messages stream into ChatStreamEvents (a pure object, no I/O).

    - text / thinking deltas stream as ContentDelta / ReasoningDelta with the block index;
    - ``signature_delta`` pieces are concatenated per block and emitted as ThinkingSignature
      at that block's ``content_block_stop``; ``redacted_thinking`` as RedactedThinking there;
    - ``tool_use``: ToolCallStart at start, ToolCallDelta per ``input_json_delta``, ToolCallReady
      at its stop (empty input -> the start's ``input``, i.e. ``{}``; shared/cases 026);
    - every other block type (``server_tool_use``, ``web_search_tool_result``, ...) is a server
      tool block: one ServerToolBlockEvent with the complete raw block at its stop;
    - ``message_delta`` usage is laid over ``message_start`` usage; ToolCallsRequested (when
      there were calls) and MessageEnd close the response at ``message_stop``, or at the end of
      the stream when a ``message_delta`` already gave the stop_reason;
    - ``event: error`` raises the classified ProviderError (in_stream=True); ``ping`` and unknown
      event types are ignored; the end of the stream before ``message_stop`` (or a
      ``message_delta`` with a stop_reason) raises ``stream_interrupted`` from :meth:`finish`.

    ``done`` turns true at ``message_stop``: nothing may follow, so the reader can stop there.
    """

    def __init__(self) -> None:
        self.done = False
        self._garbled: str | None = None  # a payload that was not a JSON object
        self._blocks: dict[int, _Block] = {}
        self._calls: list[ToolCall] = []
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None
        self._stop_sequence: str | None = None

    def feed(self, event: SSEEvent) -> list[ChatStreamEvent]:
        """Events completed by one SSE event; raises ProviderError for an error event (with
        the stop_reason a ``message_delta`` already gave, if any)."""
        try:
            return self._event(event)
        except ProviderError as error:
            error.stop_reason = error.stop_reason or self._stop_reason
            raise

    def _event(self, event: SSEEvent) -> list[ChatStreamEvent]:
        if self.done:
            return []
        if event.event == "error":
            raise _stream_error(event.data)
        if self._garbled is not None:
            raise _not_json(self._garbled)  # more followed it: the payload itself was broken
        if not event.data.strip():
            return []  # keep-alive without payload
        data = _load_json(event.data)
        if data is None:
            # Only the end of the stream can tell a cut-off last event from a broken one
            # (DESIGN 2.2): decide at the next event or in finish().
            self._garbled = event.data
            return []
        kind = str(data.get("type") or event.event)
        if kind == "error":
            raise _stream_error(data)
        handler = self._HANDLERS.get(kind)
        return handler(self, data) if handler else []  # ping and future event types

    def finish(self) -> list[ChatStreamEvent]:
        """End of stream: closes a response whose stop_reason arrived without message_stop;
        raises ``stream_interrupted`` for a response cut short (also inside an event)."""
        if self.done:
            return []
        if self._stop_reason is not None:
            return self._end()  # message_delta's stop_reason completes the turn by itself
        where = " inside an event" if self._garbled is not None else ""
        raise ProviderError(
            ErrorKind.STREAM_INTERRUPTED,
            f"anthropic: the stream ended{where} before message_stop",
            provider=PROTOCOL,
            in_stream=True,
        )

    # -- handlers, one per event type --------------------------------------------------------
    def _message_start(self, data: dict[str, Any]) -> list[ChatStreamEvent]:
        message = _dict(data.get("message"))
        self._overlay_usage(message.get("usage"))
        return [MessageStart(id=message.get("id"), model=message.get("model"))]

    def _block_start(self, data: dict[str, Any]) -> list[ChatStreamEvent]:
        index = _index(data)
        block = _Block(index, dict(_dict(data.get("content_block"))))
        self._blocks[index] = block
        match block.type:
            case "text":
                return _text_start(block)
            case "thinking":
                if block.raw.get("signature"):
                    block.signature.append(str(block.raw["signature"]))
                text = block.raw.get("thinking")
                return [ReasoningDelta(text, index)] if text else []
            case "tool_use":
                return [ToolCallStart(index, block.raw.get("id"), str(block.raw.get("name", "")))]
        return []

    def _block_delta(self, data: dict[str, Any]) -> list[ChatStreamEvent]:
        index = _index(data)
        delta = _dict(data.get("delta"))
        block = self._blocks.get(index)
        # Dispatch on delta.type, never on which fields happen to be there (shared/cases 061).
        match delta.get("type"):
            case "text_delta":
                return [ContentDelta(delta["text"], index)] if delta.get("text") else []
            case "thinking_delta":
                text = delta.get("thinking")
                return [ReasoningDelta(text, index)] if text else []
            case "signature_delta":
                if block is not None:
                    block.signature.append(str(delta.get("signature") or ""))
            case "input_json_delta":
                piece = str(delta.get("partial_json") or "")
                if block is not None:
                    block.json_parts.append(piece)
                    if block.type == "tool_use" and piece:
                        return [ToolCallDelta(index, piece)]
            case "citations_delta":
                return [Citation(_dict(delta.get("citation")), index)]
        return []

    def _block_stop(self, data: dict[str, Any]) -> list[ChatStreamEvent]:
        block = self._blocks.pop(_index(data), None)
        if block is None:
            return []
        match block.type:
            case "text":
                return []
            case "thinking":
                signature = "".join(block.signature)
                return [ThinkingSignature(signature)] if signature else []
            case "redacted_thinking":
                return [RedactedThinking(str(block.raw.get("data", "")))]
            case "tool_use":
                call = self._tool_call(block)
                self._calls.append(call)
                return [ToolCallReady(call)]
        raw = dict(block.raw)
        if "input" in raw or block.json_parts:
            raw["input"] = _block_input(block)[0]
        return [ServerToolBlockEvent(raw)]

    def _message_delta(self, data: dict[str, Any]) -> list[ChatStreamEvent]:
        delta = _dict(data.get("delta"))
        self._stop_reason = delta.get("stop_reason") or self._stop_reason
        self._stop_sequence = delta.get("stop_sequence") or self._stop_sequence
        self._overlay_usage(data.get("usage"))
        return []

    def _message_stop(self, data: dict[str, Any]) -> list[ChatStreamEvent]:
        return self._end()

    _HANDLERS: ClassVar[dict[str, Any]] = {
        "message_start": _message_start,
        "content_block_start": _block_start,
        "content_block_delta": _block_delta,
        "content_block_stop": _block_stop,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
    }

    # -- helpers -----------------------------------------------------------------------------
    def _tool_call(self, block: _Block) -> ToolCall:
        provider_id = block.raw.get("id") or None
        arguments, problem = _block_input(block)
        return ToolCall(
            id=provider_id or new_tool_call_id(),
            name=str(block.raw.get("name", "")),
            arguments=arguments,
            provider_id=provider_id,
            index=block.index,
            arguments_error=problem,
        )

    def _overlay_usage(self, usage: Any) -> None:
        # message_delta carries the final (cumulative) counts; a null there means "unchanged".
        for key, value in _dict(usage).items():
            if value is not None:
                self._usage[key] = value

    def _end(self) -> list[ChatStreamEvent]:
        if any(b.type == "tool_use" for b in self._blocks.values()):
            # A tool call whose input never closed must not run with truncated arguments.
            raise ProviderError(
                ErrorKind.STREAM_INTERRUPTED,
                "anthropic: the response ended inside a tool_use block",
                provider=PROTOCOL,
                in_stream=True,
            )
        self.done = True
        events: list[ChatStreamEvent] = []
        if self._calls:
            events.append(ToolCallsRequested(list(self._calls)))
        events.append(MessageEnd(usage=normalize_usage(self._usage),
                                 stop_reason=self._stop_reason,
                                 stop_sequence=self._stop_sequence))
        return events


def normalize_usage(raw: Mapping[str, Any]) -> Usage:
    """Anthropic usage as :class:`Usage` (shared/fixtures/providers README): input_tokens
    excludes cache reads; ``cached_input_tokens`` = ``cache_read_input_tokens``;
    ``reasoning_tokens`` = ``output_tokens_details.thinking_tokens``, only when reported."""
    details = raw.get("output_tokens_details")
    return Usage(
        input_tokens=raw.get("input_tokens"),
        output_tokens=raw.get("output_tokens"),
        cached_input_tokens=raw.get("cache_read_input_tokens"),
        cache_creation_input_tokens=raw.get("cache_creation_input_tokens"),
        reasoning_tokens=details.get("thinking_tokens") if isinstance(details, dict) else None,
    )


def _text_start(block: _Block) -> list[ChatStreamEvent]:
    events: list[ChatStreamEvent] = []
    if block.raw.get("text"):
        events.append(ContentDelta(str(block.raw["text"]), block.index))
    for citation in block.raw.get("citations") or []:
        events.append(Citation(_dict(citation), block.index))
    return events


def _block_input(block: _Block) -> tuple[dict[str, Any], str | None]:
    """The block's input: the parsed ``input_json_delta`` text when there is any, else the
    ``input`` object of content_block_start (shared/cases/provider 026, TOOLCALL-ARGS); with
    the reason when the text is not a JSON object (``parse_tool_arguments``)."""
    text = "".join(block.json_parts)
    if not text.strip():
        start = block.raw.get("input")
        return (dict(start) if isinstance(start, dict) else {}), None
    return parse_tool_arguments(text)


def _stream_error(payload: Any) -> ProviderError:
    return classify_error(payload, provider=PROTOCOL, status=None, in_stream=True)


def _load_json(data: str) -> dict[str, Any] | None:
    try:
        value = json.loads(data)  # Anthropic pads objects with spaces: valid JSON whitespace
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _not_json(data: str) -> ProviderError:
    return ProviderError(
        ErrorKind.SERVER,
        f"anthropic: a stream event is not a JSON object: {data[:200]!r}",
        provider=PROTOCOL,
        in_stream=True,
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _index(data: dict[str, Any]) -> int:
    index = data.get("index")
    return index if isinstance(index, int) else 0


