"""Serialize a conversation into Anthropic ``messages`` (shared/cases/provider, HISTORY-SHAPE and
REASONING-ROUNDTRIP).

Invariants of the output, each from the Messages API
(https://platform.claude.com/docs/en/api/messages):

- roles strictly alternate user/assistant, first and last ``user``: consecutive same-role turns
  are merged, a user "Continue." is added before a leading (or after a trailing) assistant turn;
  system-role messages become the top-level ``system`` when they lead, user text otherwise
  (case 040);
- the user turn after an assistant turn with ``tool_use`` blocks starts with exactly one
  ``tool_result`` per call, in call order and contiguous; other content follows; a call without
  a result gets an error result, a result without its call is dropped (case 041; "Messages
  following tool_use blocks must begin with a matching number of tool_result blocks",
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls);
- reasoning artefacts of an Anthropic assistant message go back verbatim: a thinking block only
  with its signature, redacted_thinking, server tool blocks, citations (cases 032, 034, 061;
  https://platform.claude.com/docs/en/build-with-claude/extended-thinking); those of another
  provider's message are dropped; client tool calls are kept from every provider;
- no empty text block, and whitespace-only text only beside real text: Anthropic rejects a
  message whose text is all blank, but its own web-search answers interleave blocks such as
  ``"\\n\\n"`` between cited ones, and those go back as they came.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apps.engine.images import MEDIA_TYPES, ImageLimits, fit
from apps.engine.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = ["CONTINUE", "IMAGE_LIMITS", "NOT_EXECUTED", "serialize_history"]

CONTINUE = "Continue."
IMAGE_LIMITS = ImageLimits(max_edge=1568, max_bytes=5 * 1024 * 1024,
                           media_types=frozenset(MEDIA_TYPES.values()))
"""https://platform.claude.com/docs/en/build-with-claude/vision: JPEG, PNG, GIF and WebP; at
most 5 MB an image (of base64: the API counts the encoded text); 8000 x 8000 px (2000 x 2000
with more than 20 images); a long edge over 1568 px is scaled down by the API anyway, so it is
scaled here, where it costs no upload and no latency."""
NOT_EXECUTED = "This tool call was not executed."


@dataclass(slots=True)
class _Turn:
    role: str  # "user" | "assistant"
    blocks: list[dict[str, Any]]


def serialize_history(messages: list[Message]) -> tuple[list[str], list[dict[str, Any]]]:
    """``(system_parts, messages)``: the texts of the leading system-role messages, and the
    history as Anthropic message params (``{"role", "content": [blocks]}``)."""
    system, rest = _split_system(messages)
    turns = [turn for message in rest if (turn := _turn(message)) is not None]
    turns = _pair_tool_results(_merge(turns))
    if not turns or turns[0].role != "user":
        turns.insert(0, _Turn("user", [_text(CONTINUE)]))
    if turns[-1].role != "user":
        # A final assistant turn would be a prefill, which thinking and newer models reject.
        turns.append(_Turn("user", [_text(CONTINUE)]))
    return system, [{"role": t.role, "content": t.blocks} for t in turns]


def _split_system(messages: list[Message]) -> tuple[list[str], list[Message]]:
    start = 0
    while start < len(messages) and messages[start].role == "system":
        start += 1
    system = [text for m in messages[:start] if (text := m.text().strip())]
    return system, messages[start:]


def _turn(message: Message) -> _Turn | None:
    if message.role == "assistant":
        native = message.provider == "anthropic"
        blocks = [p for b in message.content if (p := _assistant_block(b, native)) is not None]
        role = "assistant"
    else:  # user, tool (results) and mid-conversation system messages all speak as the user
        blocks = [p for b in message.content if (p := _user_block(b)) is not None]
        role = "user"
    blocks = _without_blank_text(blocks)
    return _Turn(role, blocks) if blocks else None


def _without_blank_text(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop whitespace-only text blocks unless some text block of the message is not blank."""
    if any(b["type"] == "text" and b["text"].strip() for b in blocks):
        return blocks
    return [b for b in blocks if b["type"] != "text"]


def _user_block(block: ContentBlock) -> dict[str, Any] | None:
    match block:
        case TextBlock(text=text) if text:
            return _text(text)
        case ImageBlock():
            return _image(block)
        case ToolResultBlock():
            return _tool_result(block)
    return None  # reasoning and calls never belong to a user turn


def _assistant_block(block: ContentBlock, native: bool) -> dict[str, Any] | None:
    match block:
        case ToolUseBlock(id=call_id, name=name, input=arguments):
            return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
        case TextBlock(text=text, citations=citations) if text:
            param = _text(text)
            if native and citations:
                param["citations"] = citations
            return param
        case ThinkingBlock(thinking=thinking, signature=signature) if native and signature:
            return {"type": "thinking", "thinking": thinking, "signature": signature}
        case RedactedThinkingBlock(data=data) if native:
            return {"type": "redacted_thinking", "data": data}
        case ServerToolBlock(raw=raw) if native:
            return dict(raw)
    # Unsigned thinking (cut off, or another provider's), foreign artefacts, stray blocks.
    return None


def _merge(turns: list[_Turn]) -> list[_Turn]:
    merged: list[_Turn] = []
    for turn in turns:
        if merged and merged[-1].role == turn.role:
            merged[-1] = _Turn(turn.role, merged[-1].blocks + turn.blocks)
        else:
            merged.append(turn)
    return merged


def _pair_tool_results(turns: list[_Turn]) -> list[_Turn]:
    """Give every tool_use its tool_result first in the next user turn; a user turn left with
    nothing (only orphan results) disappears and its neighbours merge, so repeat until stable."""
    while True:
        paired, vanished = _pair_once(turns)
        if not vanished:
            return paired
        turns = _merge(paired)


def _pair_once(turns: list[_Turn]) -> tuple[list[_Turn], bool]:
    out: list[_Turn] = []
    calls: list[str] = []  # tool_use ids of the assistant turn just before
    vanished = False
    for turn in turns:
        if turn.role == "assistant":
            if calls:
                out.append(_Turn("user", _results_first([], calls)))
            calls = [b["id"] for b in turn.blocks if b["type"] == "tool_use"]
            out.append(turn)
            continue
        blocks = _results_first(turn.blocks, calls)
        calls = []
        if blocks:
            out.append(_Turn("user", blocks))
        else:
            vanished = True
    if calls:
        out.append(_Turn("user", _results_first([], calls)))
    return out, vanished


def _results_first(blocks: list[dict[str, Any]], calls: list[str]) -> list[dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    others: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] != "tool_result":
            others.append(block)
        elif block["tool_use_id"] in calls and block["tool_use_id"] not in results:
            results[block["tool_use_id"]] = block
        # else: a duplicate, or a result whose call is not in the turn before: Anthropic
        # rejects it, and it answers nothing the model asked for.
    missing = {"is_error": True, "content": NOT_EXECUTED}
    ordered = [results.get(c) or {"type": "tool_result", "tool_use_id": c, **missing}
               for c in calls]
    return ordered + others


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(block: ImageBlock) -> dict[str, Any]:
    block = fit(block, IMAGE_LIMITS)
    source = {"type": "base64", "media_type": block.media_type, "data": block.data}
    return {"type": "image", "source": source}


def _tool_result(block: ToolResultBlock) -> dict[str, Any]:
    param: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
    if isinstance(block.content, str):
        content: Any = block.content if block.content.strip() else None
    else:
        parts = [p for b in block.content if (p := _user_block(b)) is not None]
        content = _without_blank_text(parts) or None
    if content is not None:
        param["content"] = content
    if block.is_error:
        param["is_error"] = True
    return param
