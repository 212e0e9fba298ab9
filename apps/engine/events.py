"""Provider-level stream events: the one normalized stream every adapter produces.

``AiProvider.stream_chat`` yields these, in order, for one model call (DESIGN 2.3). Reading
them in order with :class:`apps.engine.providers.assembler.MessageAssembler` rebuilds the
assistant message with every reasoning artefact in place. Failures are raised as
``ProviderError``, not yielded (see ``errors.py``).

Each event is a frozen dataclass with a ``type`` tag, so ``dataclasses.asdict`` serializes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from apps.engine.messages import ToolCall, Usage

__all__ = [
    "ChatStreamEvent",
    "Citation",
    "ContentDelta",
    "GroundingMetadata",
    "MessageEnd",
    "MessageStart",
    "ReasoningDelta",
    "RedactedThinking",
    "Retrying",
    "ServerToolBlockEvent",
    "ThinkingSignature",
    "ThoughtSignature",
    "ToolCallDelta",
    "ToolCallReady",
    "ToolCallStart",
    "ToolCallsRequested",
]


@dataclass(frozen=True, slots=True)
class MessageStart:
    """The provider accepted the call: its message ``id`` and the ``model`` that answers."""

    id: str | None = None
    model: str | None = None
    type: Literal["message_start"] = "message_start"


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """A piece of answer text; ``index``: the provider's content-block index where the protocol
    has one (Anthropic), so separate blocks stay separate."""

    text: str
    index: int | None = None
    type: Literal["content_delta"] = "content_delta"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning text (Anthropic thinking, OpenAI-compatible reasoning_content or
    reasoning, Gemini ``thought: true`` parts, Mistral thinking parts); ``index`` as for
    ContentDelta."""

    text: str
    index: int | None = None
    type: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass(frozen=True, slots=True)
class ThinkingSignature:
    """Anthropic: the complete signature of the thinking block that just ended."""

    signature: str
    type: Literal["thinking_signature"] = "thinking_signature"


@dataclass(frozen=True, slots=True)
class ThoughtSignature:
    """Gemini: the thoughtSignature of the text or thought part just streamed (a functionCall's
    signature travels on its ToolCall instead)."""

    signature: str
    type: Literal["thought_signature"] = "thought_signature"


@dataclass(frozen=True, slots=True)
class RedactedThinking:
    """Anthropic: one ``redacted_thinking`` block's opaque ``data``."""

    data: str
    type: Literal["redacted_thinking"] = "redacted_thinking"


@dataclass(frozen=True, slots=True)
class ServerToolBlockEvent:
    """A provider-run tool block, complete, as the provider's raw object (Anthropic
    ``server_tool_use`` / ``web_search_tool_result`` ...; Gemini ``executableCode`` ...)."""

    block: dict[str, Any]
    type: Literal["server_tool_block"] = "server_tool_block"


@dataclass(frozen=True, slots=True)
class Citation:
    """A citation object attached to the answer text streamed so far (Anthropic
    ``citations_delta.citation``, OpenRouter ``url_citation``, Perplexity citation URL);
    ``index`` as for ContentDelta."""

    citation: dict[str, Any]
    index: int | None = None
    type: Literal["citation"] = "citation"


@dataclass(frozen=True, slots=True)
class GroundingMetadata:
    """Gemini ``groundingMetadata`` (the latest non-empty one wins)."""

    metadata: dict[str, Any]
    type: Literal["grounding_metadata"] = "grounding_metadata"


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A client tool call began: stream ``index``, ``id`` as sent (None if not), ``name``."""

    index: int
    id: str | None
    name: str
    type: Literal["tool_call_start"] = "tool_call_start"


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of the JSON arguments text of call ``index`` (partial JSON, for display)."""

    index: int
    arguments_delta: str
    type: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    """One call is complete, emitted the moment the protocol says so: the executor starts it."""

    call: ToolCall
    type: Literal["tool_call_ready"] = "tool_call_ready"


@dataclass(frozen=True, slots=True)
class ToolCallsRequested:
    """All client calls of this response, in order; emitted once, after the last ToolCallReady."""

    calls: list[ToolCall]
    type: Literal["tool_calls_requested"] = "tool_calls_requested"


@dataclass(frozen=True, slots=True)
class Retrying:
    """The call failed before any output and will be retried after ``delay_s`` seconds:
    ``attempt`` (1-based) of ``max_attempts``, the error ``kind`` and its ``message``."""

    attempt: int
    max_attempts: int
    delay_s: float
    kind: str
    message: str
    type: Literal["retrying"] = "retrying"


@dataclass(frozen=True, slots=True)
class MessageEnd:
    """The response is complete: ``usage``, ``stop_reason`` (the provider's raw value, e.g.
    "end_turn", "tool_calls", "STOP"), ``stop_sequence``, ``reasoning_ms`` (time from the first
    reasoning delta to the first non-reasoning output, when there was reasoning)."""

    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    reasoning_ms: float | None = None
    type: Literal["message_end"] = "message_end"


ChatStreamEvent = (
    MessageStart
    | ContentDelta
    | ReasoningDelta
    | ThinkingSignature
    | ThoughtSignature
    | RedactedThinking
    | ServerToolBlockEvent
    | Citation
    | GroundingMetadata
    | ToolCallStart
    | ToolCallDelta
    | ToolCallReady
    | ToolCallsRequested
    | Retrying
    | MessageEnd
)
