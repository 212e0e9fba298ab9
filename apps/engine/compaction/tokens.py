"""Token estimates and the compaction threshold, exactly as DESIGN 2.6 gives them.

- threshold: ``cw = min(context_window or 200000, 200000)``; ``reserved = min(max_output or 8000,
  20000)``; compact at ``cw - reserved - 13000`` tokens;
- estimate: the last API usage (input + output tokens) as the anchor, plus ``len(content)/4 + 4``
  for each message since; without usage, that heuristic over all messages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from apps.engine.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

__all__ = [
    "compaction_threshold",
    "content_length",
    "estimate_message",
    "estimate_tokens",
    "usage_tokens",
]

DEFAULT_WINDOW = 200_000
DEFAULT_OUTPUT = 8_000
MAX_RESERVED = 20_000
MARGIN = 13_000
IMAGE_CHARS = 6_400  # an image counts as ~1600 tokens, roughly what providers bill for one


def compaction_threshold(context_window: int | None, max_output: int | None) -> int:
    """Tokens at which the history is compacted."""
    cw = min(context_window or DEFAULT_WINDOW, DEFAULT_WINDOW)
    reserved = min(max_output or DEFAULT_OUTPUT, MAX_RESERVED)
    return cw - reserved - MARGIN


def content_length(message: Message) -> int:
    """Characters of everything the message sends: text, reasoning, tool arguments, results."""
    total = len(message.reasoning_content or "")
    for block in message.content:
        match block:
            case TextBlock(text=text):
                total += len(text)
            case ThinkingBlock(thinking=thinking, signature=signature):
                total += len(thinking) + len(signature or "")
            case RedactedThinkingBlock(data=data):
                total += len(data)
            case ToolUseBlock(name=name, input=arguments):
                total += len(name) + len(json.dumps(arguments))
            case ToolResultBlock():
                total += len(block.text())
            case ServerToolBlock(raw=raw):
                total += len(json.dumps(raw))
            case ImageBlock():
                total += IMAGE_CHARS
    return total


def estimate_message(message: Message) -> int:
    """``len(content)/4 + 4`` tokens."""
    return content_length(message) // 4 + 4


def usage_tokens(usage: Usage, protocol: str | None) -> int | None:
    """The context a call used: input + output tokens. Anthropic reports cache reads and writes
    apart from ``input_tokens``, so they are added back for it; None without input tokens."""
    if usage.input_tokens is None:
        return None
    total = usage.input_tokens + (usage.output_tokens or 0)
    if protocol == "anthropic":
        total += (usage.cached_input_tokens or 0) + (usage.cache_creation_input_tokens or 0)
    return total


def estimate_tokens(messages: Sequence[Message], anchor_tokens: int | None = None,
                    anchor_index: int = 0) -> int:
    """Tokens the history uses: ``anchor_tokens`` (from :func:`usage_tokens` of the last call,
    which covered ``messages[:anchor_index]``) plus the heuristic for the messages after it;
    without an anchor, the heuristic over all messages."""
    if anchor_tokens is None:
        return sum(estimate_message(m) for m in messages)
    return anchor_tokens + sum(estimate_message(m) for m in messages[anchor_index:])
