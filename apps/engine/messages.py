"""One message model for every provider, and the request sent to a provider.

A conversation is a list of :class:`Message`. Content is always a list of typed blocks. Reasoning
artefacts a provider issued (Anthropic thinking signatures and redacted thinking, Anthropic server
tool blocks, DeepSeek ``reasoning_content``, Gemini ``thoughtSignature`` per part) are stored
verbatim on the block or message that carried them, and ``Message.provider`` records which wire
protocol produced an assistant message: each adapter replays the artefacts unchanged to its own
protocol and drops them cleanly for another (DESIGN 2.1, shared/cases/provider README,
REASONING-ROUNDTRIP).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

__all__ = [
    "Author",
    "ChatRequest",
    "ContentBlock",
    "ImageBlock",
    "Message",
    "Protocol",
    "ReasoningParams",
    "RedactedThinkingBlock",
    "ServerToolBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolCall",
    "ToolDefinition",
    "ToolResultBlock",
    "ToolUseBlock",
    "Usage",
]

Protocol = Literal["anthropic", "openai", "gemini"]
"""The three wire protocols. OpenAI-compatible vendors (DeepSeek, xAI, Qwen, ...) are "openai"."""

Role = Literal["system", "user", "assistant", "tool"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class TextBlock(_Model):
    """Answer text. ``citations``: provider citation objects (Anthropic ``citations_delta``), or
    bare URL strings (Perplexity's top-level ``citations``)."""

    type: Literal["text"] = "text"
    text: str
    citations: list[dict[str, Any] | str] | None = None
    thought_signature: str | None = None  # Gemini: the thoughtSignature of the part, verbatim


class ImageBlock(_Model):
    """An image, as base64 ``data`` with its ``media_type`` (e.g. "image/png").

    ``id``: the host's id of an image it stores (a person's upload). Such a block is stored and
    shown by id: its ``data`` is left out when it is serialized, and the host loads it again
    before the block goes to a provider. ``url``: where the host serves such an image, in what
    clients are shown (never sent to a provider)."""

    type: Literal["image"] = "image"
    media_type: str
    data: str = ""
    id: str | None = None
    url: str | None = None

    @model_serializer(mode="wrap")
    def _by_id(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped = handler(self)
        if self.id is not None:
            dumped.pop("data", None)  # never inline: the host has the bytes
        return dumped


class ThinkingBlock(_Model):
    """Reasoning text. ``signature``: Anthropic's signature (required to send the block back);
    ``thought_signature``: Gemini's thoughtSignature on a ``thought: true`` part."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None
    thought_signature: str | None = None


class RedactedThinkingBlock(_Model):
    """Anthropic ``redacted_thinking``: encrypted reasoning sent back verbatim."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ServerToolBlock(_Model):
    """A block run by the provider itself (Anthropic ``server_tool_use``/``*_tool_result``,
    Gemini ``executableCode``/``codeExecutionResult``...), kept as the provider's raw object."""

    type: Literal["server_tool"] = "server_tool"
    raw: dict[str, Any]


class ToolUseBlock(_Model):
    """A client tool call: ``id`` (always set; minted when the provider sent none), ``name``,
    ``input`` (the parsed arguments object)."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None  # Gemini: thoughtSignature of the functionCall part


class ToolResultBlock(_Model):
    """The result of the call ``tool_use_id``: text or text/image blocks, ``is_error`` for failures.
    ``name`` repeats the tool's name because Gemini's functionResponse is matched by name."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    name: str = ""
    content: str | list[TextBlock | ImageBlock] = ""
    is_error: bool = False

    def text(self) -> str:
        """The result as plain text (image blocks omitted)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))


ContentBlock = Annotated[
    TextBlock
    | ImageBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ServerToolBlock
    | ToolUseBlock
    | ToolResultBlock,
    Field(discriminator="type"),
]


class Author(_Model):
    """The person who wrote a user message: a stable ``id`` and a display ``name``."""

    id: str
    name: str


class Message(_Model):
    """One turn. ``content`` accepts a plain string (turned into one text block).

    - ``role="tool"`` messages hold :class:`ToolResultBlock` s, one per call of the batch.
    - ``reasoning_content``: OpenAI-compatible reasoning text (DeepSeek, xAI, Qwen...), verbatim.
    - ``provider``: the protocol that produced an assistant message (``None`` for people's).
    - ``status``: ``cancelled`` marks a partial assistant message kept after a stop.
    """

    role: Role
    content: list[ContentBlock] = Field(default_factory=list)
    author: Author | None = None
    reasoning_content: str | None = None
    provider: Protocol | None = None
    model: str | None = None
    status: Literal["complete", "cancelled", "error"] = "complete"

    @field_validator("content", mode="before")
    @classmethod
    def _text_to_blocks(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [{"type": "text", "text": value}] if value else []
        return value

    def text(self) -> str:
        """The concatenated answer text of the message."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def tool_calls(self) -> list[ToolUseBlock]:
        """The client tool calls of an assistant message, in order."""
        return [b for b in self.content if isinstance(b, ToolUseBlock)]


class ToolDefinition(_Model):
    """A tool offered to the model, in OpenAI's function-calling form (``function`` object):
    ``name``, ``description``, ``parameters`` (a JSON Schema object). Adapters convert on send."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolCall(_Model):
    """A complete client tool call as streamed: ``id`` (minted if ``provider_id`` is None),
    ``name``, ``arguments`` (an object), ``thought_signature`` (Gemini), ``index`` (stream
    order). ``arguments_error`` says why the arguments text could not be read (cut off at the
    output limit, not JSON): the call is not run and the model is told, so it can retry."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    provider_id: str | None = None
    thought_signature: str | None = None
    index: int = 0
    arguments_error: str | None = None  # the model's arguments were not a JSON object


class ReasoningParams(_Model):
    """The one reasoning/extension struct; each adapter maps the fields its protocol understands
    and ignores the rest (DESIGN 2.1).

    - ``effort``: OpenAI ``reasoning_effort`` / Anthropic ``output_config.effort`` /
      DeepSeek ``reasoning_effort``.
    - ``thinking_type``: "enabled" | "disabled" | "adaptive" (Anthropic, DeepSeek, Gemini).
    - ``thinking_budget``: tokens (Anthropic ``budget_tokens``, Gemini ``thinkingBudget``).
    - ``thinking_level``: Gemini 3 ``thinkingLevel``.
    - ``text_verbosity``: GPT-5 ``verbosity``.
    - ``enabled_search``: Qwen ``enable_search``; ``url_context``: Gemini url_context tool.
    - ``disable_context_caching``: Anthropic: do not mark prompt-cache breakpoints.
    - ``include_thoughts``: Gemini ``includeThoughts`` (defaults to on when thinking is on).
    """

    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    thinking_type: Literal["enabled", "disabled", "adaptive"] | None = None
    thinking_budget: int | None = Field(default=None, ge=0, le=1_000_000)  # no model takes more
    thinking_level: Literal["minimal", "low", "medium", "high"] | None = None
    text_verbosity: Literal["low", "medium", "high"] | None = None
    enabled_search: bool | None = None
    disable_context_caching: bool | None = None
    url_context: bool | None = None
    include_thoughts: bool | None = None


class ChatRequest(_Model):
    """One model call: ``model``, ``system`` prompt, ``messages`` (history, oldest first),
    ``tools``, ``max_tokens`` (output cap), ``temperature``, ``reasoning``, ``server_tools``
    (provider-run tools to enable, e.g. "web_search", "url_context", "code_execution")."""

    model: str
    messages: list[Message]
    system: str | None = None
    tools: list[ToolDefinition] = Field(default_factory=list)
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = None
    reasoning: ReasoningParams | None = None
    server_tools: list[str] = Field(default_factory=list)


class Usage(_Model):
    """Token counts of one call, normalized across providers; ``None`` = not reported.

    ``input_tokens`` excludes cache reads for Anthropic (as Anthropic reports it) and includes
    them for OpenAI and Gemini (as they report it); ``cached_input_tokens`` is the cache-read part.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    tool_use_prompt_tokens: int | None = None
    total_tokens: int | None = None
