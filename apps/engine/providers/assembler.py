"""Rebuild the assistant message from a ChatStreamEvent sequence.

Every provider-issued reasoning artefact lands on the block that carried it, in received order
(shared/cases/provider README, REASONING-ROUNDTRIP): Anthropic signatures on their thinking
block, redacted thinking and server-tool blocks verbatim, Gemini thoughtSignatures on their part,
OpenAI-compatible reasoning in ``reasoning_content``. Citations stay on the text they came
with; Gemini's ``groundingMetadata`` (one per response) joins the citations of the last text
part (:func:`apps.engine.sources.grounding_citation`), so the message keeps its sources. The
runtime uses it for history; the replay command uses it to report what a stream contained.
"""

from __future__ import annotations

from typing import Any, Literal

from apps.engine.events import (
    ChatStreamEvent,
    Citation,
    ContentDelta,
    GroundingMetadata,
    MessageEnd,
    MessageStart,
    ReasoningDelta,
    RedactedThinking,
    ServerToolBlockEvent,
    ThinkingSignature,
    ThoughtSignature,
    ToolCallReady,
)
from apps.engine.messages import (
    ContentBlock,
    Message,
    Protocol,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolUseBlock,
    Usage,
)
from apps.engine.sources import grounding_citation

__all__ = ["MessageAssembler"]


class MessageAssembler:
    """Feed events with :meth:`feed`; read :meth:`message` at the end (or after a failure, for
    the partial message). ``provider``: the protocol of the stream."""

    def __init__(self, provider: Protocol) -> None:
        self.provider: Protocol = provider
        self._blocks: list[ContentBlock] = []
        self.reasoning_content: list[str] = []
        self.tool_calls: list[ToolCall] = []
        self.citations: list[dict[str, Any] | str] = []
        self.grounding_metadata: dict[str, Any] | None = None
        self.message_id: str | None = None
        self.model: str | None = None
        self.usage: Usage | None = None
        self.stop_reason: str | None = None
        self.ended = False
        self._open: ContentBlock | None = None  # the block deltas may still extend
        self._open_index: int | None = None
        self._tail: list[str] = []  # the open block's deltas not yet joined into it: one
        # join per block, where ``+=`` copied the text so far for every delta

    @property
    def blocks(self) -> list[ContentBlock]:
        """The content blocks so far, in received order."""
        self._join()
        return self._blocks

    def feed(self, event: ChatStreamEvent) -> None:
        """Apply one event."""
        match event:
            case ContentDelta(text=text, index=index):
                self._text(text, index)
            case ReasoningDelta(text=text, index=index):
                self._reasoning(text, index)
            case ThinkingSignature(signature=signature):
                self._sign_thinking(signature)
            case ThoughtSignature(signature=signature):
                self._sign_part(signature)
            case RedactedThinking(data=data):
                self._append(RedactedThinkingBlock(data=data))
            case ServerToolBlockEvent(block=block):
                self._append(ServerToolBlock(raw=block))
            case Citation(citation=citation, index=index):
                self._cite(citation, index)
            case GroundingMetadata(metadata=metadata):
                self.grounding_metadata = metadata
            case ToolCallReady(call=call):
                self.tool_calls.append(call)
                self._append(ToolUseBlock(id=call.id, name=call.name, input=call.arguments,
                                          thought_signature=call.thought_signature))
            case MessageStart(id=message_id, model=model):
                self.message_id = self.message_id or message_id
                self.model = self.model or model
            case MessageEnd(usage=usage, stop_reason=stop_reason):
                self.usage, self.stop_reason, self.ended = usage, stop_reason, True
            case _:
                pass  # tool-call progress and retry notices change no content

    def message(self, status: Literal["complete", "cancelled", "error"] = "complete") -> Message:
        """The assistant message assembled so far."""
        reasoning = "".join(self.reasoning_content)
        return Message(
            role="assistant",
            content=self._grounded([b for b in self.blocks if not _empty(b)]),
            reasoning_content=reasoning if self.reasoning_content else None,
            provider=self.provider,
            model=self.model,
            status=status,
        )

    def _grounded(self, blocks: list[ContentBlock]) -> list[ContentBlock]:
        """``blocks`` with the grounding metadata on a copy of the last text block (a new empty
        one when there is none): ``message`` may be called more than once."""
        if self.grounding_metadata is None:
            return blocks
        cited = grounding_citation(self.grounding_metadata)
        for at in range(len(blocks) - 1, -1, -1):
            block = blocks[at]
            if isinstance(block, TextBlock) and block.text:
                blocks[at] = block.model_copy(
                    update={"citations": [*(block.citations or []), cited]})
                return blocks
        return [*blocks, TextBlock(text="", citations=[cited])]

    def _append(self, block: ContentBlock) -> None:
        self._close()
        self._blocks.append(block)

    def _close(self) -> None:
        """No more deltas for the open block."""
        self._join()
        self._open, self._open_index = None, None

    def _join(self) -> None:
        block, tail = self._open, self._tail
        if not tail:
            return
        if isinstance(block, TextBlock):
            block.text += "".join(tail)
        elif isinstance(block, ThinkingBlock):
            block.thinking += "".join(tail)
        tail.clear()

    def _text(self, text: str, index: int | None) -> None:
        block = self._open
        if isinstance(block, TextBlock) and index == self._open_index:
            self._tail.append(text)
            return
        self._append(TextBlock(text=text))
        self._open, self._open_index = self._blocks[-1], index

    def _reasoning(self, text: str, index: int | None) -> None:
        if self.provider == "openai":
            self.reasoning_content.append(text)
            return
        block = self._open
        if isinstance(block, ThinkingBlock) and index == self._open_index:
            self._tail.append(text)
            return
        self._append(ThinkingBlock(thinking=text))
        self._open, self._open_index = self._blocks[-1], index

    def _sign_thinking(self, signature: str) -> None:
        for block in reversed(self.blocks):
            if isinstance(block, ThinkingBlock) and block.signature is None:
                block.signature = signature
                break
        else:
            self._append(ThinkingBlock(thinking="", signature=signature))
        self._close()

    def _sign_part(self, signature: str) -> None:
        # Gemini puts the signature on the part that carried it; an empty text part may carry
        # one alone. Either way the signed block is closed: later text starts a new part.
        block = self._open
        if isinstance(block, (TextBlock, ThinkingBlock)) and block.thought_signature is None:
            block.thought_signature = signature
        else:
            self._blocks.append(TextBlock(text="", thought_signature=signature))
        self._close()

    def _cite(self, citation: dict[str, Any] | str, index: int | None) -> None:
        self.citations.append(citation)
        block = self._open
        if not (isinstance(block, TextBlock) and index == self._open_index):
            block = TextBlock(text="")
            self._append(block)
            self._open, self._open_index = block, index
        block.citations = [*(block.citations or []), citation]


def _empty(block: ContentBlock) -> bool:
    """An empty text part with nothing attached carries nothing worth sending back."""
    return (isinstance(block, TextBlock) and not block.text and block.citations is None
            and block.thought_signature is None)
