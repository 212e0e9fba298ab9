"""Token estimates and the compaction threshold, exactly as DESIGN 2.6 gives them.

- threshold: ``cw = min(context_window or 200000, 200000)``; ``reserved = min(max_output or 8000,
  20000)``; compact at ``cw - reserved - 13000`` tokens;
- estimate: the last API usage (input + output tokens) as the anchor, plus the per-message
  heuristic for each message since; without usage, that heuristic over all messages. The
  heuristic is ``len/4 + 4`` for Latin text, and counts scripts that tokenizers split per
  character (Han, kana, Hangul, Thai ...) per character: see :func:`text_tokens`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence

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
    "estimate_message",
    "estimate_tokens",
    "message_texts",
    "text_tokens",
    "usage_tokens",
]

DEFAULT_WINDOW = 200_000
DEFAULT_OUTPUT = 8_000
MAX_RESERVED = 20_000
MARGIN = 13_000
IMAGE_TOKENS = 1_600  # roughly what providers bill for one image
LATIN_CHARS_PER_TOKEN = 4
PER_CHARACTER_TOKENS = 1.3
"""Tokens per Han, kana or Thai character. Calibrated on the reference tokenizers in
tests/unit/engine/token_references.py (``make bench`` prints the ratios): common Chinese costs
1.09-1.10 tokens a character in cl100k_base and both Claude vocabularies, 0.77 in o200k_base,
0.61 in Qwen's and DeepSeek's; Japanese up to 1.08. 1.3 never under-counts them (DESIGN 2.6
allows 0.75-1.6); rare characters that fall back to bytes (2-3 tokens) are not worth
over-counting every text for."""
HANGUL_TOKENS = 1.5
"""Tokens per Hangul syllable: Claude's vocabularies take about 1.45 (a space before a word
does not merge with it), the others 0.6-1.2."""
WIDE_PUNCTUATION_TOKENS = 1.0
"""Tokens per CJK or full-width punctuation mark (、。「」！，：): one each in every reference."""

# (characters, tokens each). Per character: CJK Unified Ideographs with Extension A, B-G and
# the compatibility block, Hiragana, Katakana (and their half-width forms), Thai, Lao, Myanmar,
# Khmer. Hangul: Jamo, compatibility Jamo, syllables. Wide punctuation: CJK symbols and
# punctuation, full-width forms.
_CHARACTER_CLASSES = (
    (re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff"
                "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff65-\uff9f"
                "\U00020000-\U0003134f]+"), PER_CHARACTER_TOKENS),
    (re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]+"), HANGUL_TOKENS),
    (re.compile("[\u3000-\u303f\uff00-\uff64\uffa0-\uffef]+"), WIDE_PUNCTUATION_TOKENS),
)


def compaction_threshold(context_window: int | None, max_output: int | None) -> int:
    """Tokens at which the history is compacted."""
    cw = min(context_window or DEFAULT_WINDOW, DEFAULT_WINDOW)
    reserved = min(max_output or DEFAULT_OUTPUT, MAX_RESERVED)
    return cw - reserved - MARGIN


def message_texts(message: Message) -> Iterator[str]:
    """Every string the message sends: text, reasoning, tool arguments, results (not images)."""
    if message.reasoning_content:
        yield message.reasoning_content
    for block in message.content:
        match block:
            case TextBlock(text=text):
                yield text
            case ThinkingBlock(thinking=thinking, signature=signature):
                yield thinking
                yield signature or ""
            case RedactedThinkingBlock(data=data):
                yield data
            case ToolUseBlock(name=name, input=arguments):
                yield name
                yield json.dumps(arguments, ensure_ascii=False)
            case ToolResultBlock():
                yield block.text()
            case ServerToolBlock(raw=raw):
                yield json.dumps(raw, ensure_ascii=False)


def text_tokens(text: str) -> float:
    """Estimated tokens of ``text`` (fractional, so a message sums its parts before rounding):
    :data:`PER_CHARACTER_TOKENS` per Han, kana or Thai character, :data:`HANGUL_TOKENS` per
    Hangul syllable, :data:`WIDE_PUNCTUATION_TOKENS` per CJK punctuation mark, and the rest at
    :data:`LATIN_CHARS_PER_TOKEN` characters a token."""
    if text.isascii():  # the common case: one C-speed check, no regex
        return len(text) / LATIN_CHARS_PER_TOKEN
    tokens, rest = 0.0, len(text)
    for pattern, each in _CHARACTER_CLASSES:
        count = sum(map(len, pattern.findall(text)))  # runs, not characters: fewer objects
        tokens += count * each
        rest -= count
    return tokens + rest / LATIN_CHARS_PER_TOKEN


def estimate_message(message: Message) -> int:
    """Estimated tokens of one message: :func:`text_tokens` of everything it sends, rounded
    down, plus :data:`IMAGE_TOKENS` an image and 4 for the message's framing."""
    images = sum(isinstance(block, ImageBlock) for block in message.content)
    text = sum(text_tokens(piece) for piece in message_texts(message))
    return int(text) + images * IMAGE_TOKENS + 4


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
