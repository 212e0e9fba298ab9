"""The engine's two event streams.

Provider level: the one normalized stream every adapter produces.

``AiProvider.stream_chat`` yields these, in order, for one model call (DESIGN 2.3). Reading
them in order with :class:`apps.engine.providers.assembler.MessageAssembler` rebuilds the
assistant message with every reasoning artefact in place. Failures are raised as
``ProviderError``, not yielded (see ``errors.py``).

Each provider event is a frozen dataclass with a ``type`` tag (``dataclasses.asdict``
serializes it).

Runtime level (second half of this module): what one agent run reports to its host, tagged by
``kind``; the host persists and broadcasts them (DESIGN 3.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from apps.engine.messages import Message, ToolCall, ToolResultBlock, Usage

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
    # runtime level
    "RUNTIME_EVENT",
    "ApprovalDecided",
    "AwaitingElicitation",
    "AwaitingApproval",
    "AwaitingInput",
    "Compacted",
    "CompactionFailed",
    "CompactionStarted",
    "ElicitationAnswered",
    "ErrorEvent",
    "InputReceived",
    "McpListChanged",
    "MessageEnded",
    "MessageStarted",
    "MessagesInjected",
    "ReasoningDeltaEvent",
    "RetryingEvent",
    "RunEnded",
    "RunStarted",
    "RuntimeEvent",
    "SubagentEvent",
    "TextDelta",
    "TodosUpdated",
    "ToolCallArgumentsDelta",
    "ToolCallReadyEvent",
    "ToolCallStarted",
    "ToolResultEvent",
    "ToolStarted",
    "TurnEnded",
    "TurnStarted",
    "UsageUpdated",
    "WarningEvent",
    "WikiChanged",
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
    ``citations_delta.citation``, OpenRouter ``url_citation``, Perplexity citation URL as a bare
    string, as its top-level ``citations`` array has it); ``index`` as for ContentDelta."""

    citation: dict[str, Any] | str
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


# ---------------------------------------------------------------------------------------------
# Runtime events: what a run tells its host (and, through the host, the room in the browser).
# ---------------------------------------------------------------------------------------------
# Pydantic models tagged by ``kind`` (the wire name the room protocol uses, DESIGN 3.3):
# ``event.model_dump(mode="json")`` is the JSON form, ``RUNTIME_EVENT.validate_python(d)`` reads
# it back. ``message_id`` ties deltas to the message they build; ``call_id`` ties tool events.


class _RuntimeEvent(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunStarted(_RuntimeEvent):
    """A run began: ``run_id`` (the host's), ``model``."""

    kind: Literal["run_started"] = "run_started"
    run_id: str
    model: str


class TurnStarted(_RuntimeEvent):
    """Step ``turn`` (1-based) begins: one model call and the tools it asks for."""

    kind: Literal["turn_started"] = "turn_started"
    turn: int


class MessageStarted(_RuntimeEvent):
    """The assistant began message ``message_id``."""

    kind: Literal["message_started"] = "message_started"
    message_id: str
    role: Literal["assistant"] = "assistant"


class TextDelta(_RuntimeEvent):
    """Answer text appended to message ``message_id``."""

    kind: Literal["text_delta"] = "text_delta"
    message_id: str
    text: str


class ReasoningDeltaEvent(_RuntimeEvent):
    """Reasoning text appended to message ``message_id`` (shown collapsed)."""

    kind: Literal["reasoning_delta"] = "reasoning_delta"
    message_id: str
    text: str


class ToolCallStarted(_RuntimeEvent):
    """Call number ``index`` of message ``message_id`` began streaming; ``name`` is known."""

    kind: Literal["tool_call_started"] = "tool_call_started"
    message_id: str
    index: int
    name: str


class ToolCallArgumentsDelta(_RuntimeEvent):
    """A piece of call ``index``'s JSON arguments (partial JSON, for a live card)."""

    kind: Literal["tool_call_delta"] = "tool_call_delta"
    message_id: str
    index: int
    arguments_delta: str


class ToolCallReadyEvent(_RuntimeEvent):
    """Call ``index`` is complete: ``call`` has its final id, name and arguments."""

    kind: Literal["tool_call_ready"] = "tool_call_ready"
    message_id: str
    index: int
    call: ToolCall


class MessageEnded(_RuntimeEvent):
    """Message ``message_id`` is final and in the history: ``message`` is the whole of it;
    ``status`` "cancelled" when the run was stopped mid-stream, "error" when the stream broke;
    ``usage``: the token usage of the model call that wrote it (None: not an answer, or the
    call ended before the provider reported it)."""

    kind: Literal["message_ended"] = "message_ended"
    message_id: str
    message: Message
    status: Literal["complete", "cancelled", "error"] = "complete"
    usage: Usage | None = None


class ToolStarted(_RuntimeEvent):
    """The executor started call ``call_id``."""

    kind: Literal["tool_started"] = "tool_started"
    call_id: str
    name: str


class ToolResultEvent(_RuntimeEvent):
    """Call ``call_id`` finished: ``result`` as the model will see it, ``duration_ms``."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    result: ToolResultBlock
    duration_ms: float


class AwaitingApproval(_RuntimeEvent):
    """Call ``call_id`` waits for a member's decision; ``reason`` says why it needs one;
    ``parameters``: the tool's JSON Schema, which arguments edited before approving must fit."""

    kind: Literal["awaiting_approval"] = "awaiting_approval"
    call_id: str
    name: str
    arguments: dict[str, Any]
    reason: str
    parameters: dict[str, Any] = Field(default_factory=dict)


class ApprovalDecided(_RuntimeEvent):
    """The decision on ``call_id``: ``approved``, by ``decided_by`` (None: timed out);
    ``arguments``: the call's as the model sent them; ``edited_arguments``: what ran instead,
    as ``edited_by`` changed them before approving (both None: not edited)."""

    kind: Literal["approval_decided"] = "approval_decided"
    call_id: str
    approved: bool
    decided_by: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    edited_arguments: dict[str, Any] | None = None
    edited_by: str | None = None


class AwaitingElicitation(_RuntimeEvent):
    """The MCP server ``server`` asks the room ``message``, an answer fitting ``schema`` (the
    protocol's restricted JSON Schema; :mod:`apps.engine.mcp.elicitation`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)

    kind: Literal["awaiting_elicitation"] = "awaiting_elicitation"
    elicitation_id: str
    server: str
    message: str
    schema_: dict[str, Any] = Field(alias="schema")  # BaseModel.schema is taken


class ElicitationAnswered(_RuntimeEvent):
    """The answer to ``elicitation_id``: ``action`` (accept, decline, cancel), ``content``
    (with accept), by ``answered_by`` (None: nobody answered in time, declined)."""

    kind: Literal["elicitation_answered"] = "elicitation_answered"
    elicitation_id: str
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    answered_by: str | None = None


class McpListChanged(_RuntimeEvent):
    """The MCP server ``server`` says its ``list`` of prompts or resources changed
    (``notifications/prompts/list_changed`` / ``resources/list_changed``): ask it again."""

    kind: Literal["mcp_list_changed"] = "mcp_list_changed"
    server: str
    list: Literal["prompts", "resources"]


class AwaitingInput(_RuntimeEvent):
    """The agent asked the room ``question`` (AskUser); ``question_id`` is the call id."""

    kind: Literal["awaiting_input"] = "awaiting_input"
    question_id: str
    question: str


class InputReceived(_RuntimeEvent):
    """``answer`` to ``question_id`` from ``answered_by`` (None: timed out unanswered)."""

    kind: Literal["input_received"] = "input_received"
    question_id: str
    answer: str
    answered_by: str | None = None


class MessagesInjected(_RuntimeEvent):
    """People's ``messages`` sent during the run joined the history at this step boundary."""

    kind: Literal["messages_injected"] = "messages_injected"
    messages: list[Message]


class UsageUpdated(_RuntimeEvent):
    """Token ``usage`` of the last call; ``context_tokens`` estimated in use of
    ``context_window`` (how full the context is)."""

    kind: Literal["usage"] = "usage"
    usage: Usage
    context_tokens: int
    context_window: int


class CompactionStarted(_RuntimeEvent):
    """Older turns are being summarized; ``reason``: "auto" (threshold), "reactive" (the
    provider said the prompt is too long) or "manual" (a member asked: "compact now")."""

    kind: Literal["compaction_started"] = "compaction_started"
    reason: Literal["auto", "reactive", "manual"]
    tokens_before: int


class Compacted(_RuntimeEvent):
    """Compaction replaced ``messages_removed`` messages with a summary."""

    kind: Literal["compacted"] = "compacted"
    reason: Literal["auto", "reactive", "manual"]
    messages_removed: int
    tokens_before: int
    tokens_after: int
    summary: str


class CompactionFailed(_RuntimeEvent):
    """Compaction failed (``consecutive_failures`` so far). From the third on, automatic and
    reactive compaction pause until ``paused_until`` (then try again); None: not paused. A
    manual compaction is always tried."""

    kind: Literal["compaction_failed"] = "compaction_failed"
    message: str
    consecutive_failures: int
    paused_until: datetime | None = None


class RetryingEvent(_RuntimeEvent):
    """The provider failed before any output; retry ``attempt`` of ``max_attempts`` in
    ``delay_s`` seconds (e.g. "provider overloaded, retrying in 10 s, attempt 2 of 5")."""

    kind: Literal["retrying"] = "retrying"
    attempt: int
    max_attempts: int
    delay_s: float
    error_kind: str
    message: str


class TodosUpdated(_RuntimeEvent):
    """The run's task list (TodoWrite), whole: ``[{content, status}]``."""

    kind: Literal["todos_updated"] = "todos_updated"
    todos: list[dict[str, str]]


class WikiChanged(_RuntimeEvent):
    """A wiki tool committed a change to the team wiki: ``path`` (in the wiki), the new
    ``commit``, its ``author`` (the commit's author name: "agent (for Alice)") and ``summary``
    (the message's first line); ``call_id`` of the tool call; ``created`` for a new page;
    ``merged`` when someone else's change was merged in first; ``page_url`` (the page in the
    browser), ``diff_url`` (the REST path of the change's diff) and ``diff_page_url`` (that
    diff in the browser), as the host gives them ("" without one)."""

    kind: Literal["wiki_changed"] = "wiki_changed"
    call_id: str
    path: str
    commit: str
    author: str
    summary: str
    created: bool = False
    merged: bool = False
    page_url: str = ""
    diff_url: str = ""
    diff_page_url: str = ""


class WarningEvent(_RuntimeEvent):
    """Something degraded but the run goes on (e.g. an MCP server that failed to start)."""

    kind: Literal["warning"] = "warning"
    message: str
    link: str | None = None  # a page of this site that resolves it (a sign-in page)
    link_text: str | None = None  # what the link says ("Sign in")


class SubagentEvent(_RuntimeEvent):
    """An event of the sub-agent that call ``parent_call_id`` (Task) runs, nested."""

    kind: Literal["subagent_event"] = "subagent_event"
    parent_call_id: str
    event: RuntimeEvent


class ErrorEvent(_RuntimeEvent):
    """The run hit an error: ``error_kind`` (a ProviderError kind, "tool_loop_detected",
    "max_iterations", "internal") and ``message``."""

    kind: Literal["error"] = "error"
    error_kind: str
    message: str


class TurnEnded(_RuntimeEvent):
    """Step ``turn`` is over."""

    kind: Literal["turn_ended"] = "turn_ended"
    turn: int


class RunEnded(_RuntimeEvent):
    """The run is over: ``status`` and, for "failed", the ``error_kind``."""

    kind: Literal["run_ended"] = "run_ended"
    status: Literal["completed", "cancelled", "failed"]
    error_kind: str | None = None
    turns: int = 0


RuntimeEvent = Annotated[
    RunStarted | TurnStarted | MessageStarted | TextDelta | ReasoningDeltaEvent
    | ToolCallStarted | ToolCallArgumentsDelta | ToolCallReadyEvent | MessageEnded
    | ToolStarted | ToolResultEvent | AwaitingApproval | ApprovalDecided | AwaitingElicitation
    | ElicitationAnswered | McpListChanged | AwaitingInput | InputReceived | MessagesInjected
    | UsageUpdated | CompactionStarted | Compacted
    | CompactionFailed | RetryingEvent | TodosUpdated | WikiChanged | WarningEvent
    | SubagentEvent
    | ErrorEvent | TurnEnded | RunEnded,
    Field(discriminator="kind"),
]
"""Every runtime event; ``kind`` is the tag."""

SubagentEvent.model_rebuild()
RUNTIME_EVENT: TypeAdapter[RuntimeEvent] = TypeAdapter(RuntimeEvent)
"""Validates a runtime event from its JSON form."""
