"""Token estimates and the compaction threshold of DESIGN 2.6.

- threshold: ``cw = min(context_window or 200000, 200000)``; ``reserved = min(max_output or 8000,
  20000)``; compact at ``cw - reserved - 13000`` tokens;
- estimate: the last API usage (input + output tokens) as the anchor, plus the per-message
  heuristic for each message since; without usage, that heuristic over all messages. The
  heuristic is ``len/4 + 4`` for Latin text, and counts every other script (Han, kana, Hangul,
  Cyrillic, Arabic, Devanagari, emoji ...), digits, punctuation and random-looking runs by what
  they cost in the reference tokenizers, never less: see :func:`text_tokens`.
"""

from __future__ import annotations

import json
import re
import string
from bisect import bisect_right
from collections import Counter
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
"""ASCII letters, spaces and line breaks: ``len/4`` (DESIGN 2.6)."""
ASCII_PUNCTUATION_TOKENS = 0.5
"""Tokens per ASCII punctuation mark (``( ) : = " .`` ...): vocabularies merge few of them with
letters, so code costs more than prose a character (Claude's v4.7 vocabulary most)."""
DIGIT_TOKENS = 1.2
"""Tokens per ASCII digit: Qwen's vocabulary splits numbers into single digits (plus the space
before them), the others group three; a log or a table of numbers would otherwise count four
times too little."""
RANDOM_RUN_TOKENS = 1.1
"""Tokens per character of a run that looks random (a hash, a UUID, base64, a key): no
vocabulary has its pieces, so the references spend 0.5-1.05 tokens a character on one."""
RANDOM_RUN_MIN = 16
RANDOM_RUN_PIECE = 3.5
"""A run of at least :data:`RANDOM_RUN_MIN` letters, digits and ``+/=_-`` looks random when its
pieces (a number, a capitalised or lowercase word, an all-caps run) average at most this many
characters: ``550e8400-e29b-41d4...`` does, ``test_0042_backfill_authors`` and
``AbstractSingletonProxyFactoryBean`` do not."""
PER_CHARACTER_TOKENS = 1.3
"""Tokens per Han, kana or Thai character. Calibrated on the reference tokenizers in
tests/unit/engine/token_references.py (``make bench`` prints the ratios): common Chinese costs
1.09-1.10 tokens a character in cl100k_base and both Claude vocabularies, 0.77 in o200k_base,
0.61 in Qwen's and DeepSeek's; Japanese up to 1.08, Thai up to 0.98. 1.3 never under-counts
them (DESIGN 2.6 allows 0.75-1.6)."""
HANGUL_TOKENS = 1.5
"""Tokens per Hangul syllable: Claude's vocabularies take about 1.45 (a space before a word
does not merge with it), the others 0.6-1.2."""
WIDE_PUNCTUATION_TOKENS = 1.0
"""Tokens per CJK or full-width punctuation mark (、。「」！，：): one each in every reference."""
CYRILLIC_TOKENS = 0.6
"""Tokens per Cyrillic letter: 0.56 at most (cl100k_base), 0.3-0.45 in the other references."""
OTHER_SCRIPT_TOKENS = 3.0
"""Tokens per letter of a script no reference has merges for (Armenian, Georgian, Lao, Myanmar,
Ethiopic ...): its three UTF-8 bytes, at worst one token each (cl100k_base takes 2-3)."""
SYMBOL_TOKENS = 5.0
"""Tokens per symbol of the BMP (arrows, mathematical operators, ⚠ ✓ ★ ...): three bytes, one
token each when the vocabulary has no merge for them, and Claude's vocabularies mark a lone
symbol's start and end (⚠ costs 3 in cl100k_base, 5 in Claude's v4.7)."""
ASTRAL_TOKENS = 4.0
"""Tokens per character beyond the BMP other than Han (emoji, skin tones, flags' regional
indicators, mathematical letters): four bytes; 👍 costs 3 in cl100k_base and Qwen, 🎉 4 in
Claude's."""
ASTRAL_HAN_TOKENS = 5.0
"""Tokens per Han character of Extensions B-H (𠮷 𩸽): four bytes, 4 tokens in cl100k_base and
Qwen, 5 in Claude's vocabularies."""

# Every non-ASCII character's cost: (first code point, tokens per character) up to the next
# entry's first code point, in order. Calibrated per script on the samples of
# tests/unit/engine/token_samples.py against the references (the most any of them takes a
# character, spaces between words counted at 1/4): Greek up to 1.03, Hebrew 1.13, Arabic 0.88,
# Cyrillic 0.56, Devanagari 1.2, Bengali 1.4, Tamil 1.5, the other Indic scripts 1.9-2.6
# (Gurmukhi in Claude's vocabularies), Armenian, Georgian, Lao, Myanmar, Tibetan 2.0-2.2,
# Ethiopic 2.95.
SCRIPT_TOKENS = (
    (0x0080, 2.0),  # Latin-1 punctuation and symbols (° ± · © «)
    (0x00C0, 1.0),  # accented Latin letters, Latin Extended-A/B, IPA, combining accents
    (0x00D7, 2.0), (0x00D8, 1.0), (0x00F7, 2.0), (0x00F8, 1.0),  # × and ÷ among them
    (0x0370, 1.1),  # Greek and Coptic
    (0x0400, CYRILLIC_TOKENS),  # Cyrillic and its supplement
    (0x0530, OTHER_SCRIPT_TOKENS),  # Armenian
    (0x0590, 1.2),  # Hebrew
    (0x0600, 0.95),  # Arabic
    (0x0700, OTHER_SCRIPT_TOKENS),  # Syriac
    (0x0750, 0.95),  # Arabic Supplement
    (0x0780, OTHER_SCRIPT_TOKENS),  # Thaana, NKo, Samaritan, Mandaic
    (0x08A0, 0.95),  # Arabic Extended-A
    (0x0900, 1.3),  # Devanagari
    (0x0980, 1.7),  # Bengali
    (0x0A00, 2.8),  # Gurmukhi, Gujarati, Oriya
    (0x0B80, 1.7),  # Tamil
    (0x0C00, 2.8),  # Telugu, Kannada, Malayalam, Sinhala
    (0x0E00, PER_CHARACTER_TOKENS),  # Thai
    (0x0E80, OTHER_SCRIPT_TOKENS),  # Lao, Tibetan, Myanmar, Georgian
    (0x1100, HANGUL_TOKENS),  # Hangul Jamo
    (0x1200, OTHER_SCRIPT_TOKENS),  # Ethiopic, Cherokee, Khmer, Mongolian ...
    (0x1C80, CYRILLIC_TOKENS),  # Cyrillic Extended-C
    (0x1C90, OTHER_SCRIPT_TOKENS),  # Georgian Extended, Sundanese, Vedic
    (0x1E00, 1.0),  # Latin Extended Additional (Vietnamese)
    (0x1F00, 1.1),  # Greek Extended
    (0x2000, 1.0),  # general punctuation (— “ ” … •)
    (0x200B, 3.0),  # zero-width space, joiners (emoji sequences) and direction marks
    (0x2010, 1.0),
    (0x2070, SYMBOL_TOKENS),  # super/subscripts, currency, letterlike, arrows, maths, technical
    (0x2500, 1.3),  # box drawing and block elements (tree and table output)
    (0x25A0, SYMBOL_TOKENS),  # shapes, miscellaneous symbols, dingbats, braille, arrows
    (0x2C00, OTHER_SCRIPT_TOKENS),  # Glagolitic, Coptic, Tifinagh ...
    (0x2DE0, CYRILLIC_TOKENS),  # Cyrillic Extended-A
    (0x2E00, OTHER_SCRIPT_TOKENS),  # supplemental punctuation, CJK radicals
    (0x3000, WIDE_PUNCTUATION_TOKENS),  # CJK symbols and punctuation
    (0x3040, PER_CHARACTER_TOKENS),  # Hiragana, Katakana
    (0x3100, OTHER_SCRIPT_TOKENS),  # Bopomofo
    (0x3130, HANGUL_TOKENS),  # Hangul compatibility Jamo
    (0x3190, OTHER_SCRIPT_TOKENS),  # Kanbun, CJK strokes
    (0x31F0, PER_CHARACTER_TOKENS),  # Katakana phonetic extensions
    (0x3200, OTHER_SCRIPT_TOKENS),  # enclosed CJK letters, CJK compatibility (㈱ ㎡)
    (0x3400, PER_CHARACTER_TOKENS),  # CJK Unified Ideographs Extension A
    (0x4DC0, OTHER_SCRIPT_TOKENS),  # Yijing hexagrams
    (0x4E00, PER_CHARACTER_TOKENS),  # CJK Unified Ideographs
    (0xA000, OTHER_SCRIPT_TOKENS),  # Yi, Vai, ...
    (0xA640, CYRILLIC_TOKENS),  # Cyrillic Extended-B
    (0xA6A0, OTHER_SCRIPT_TOKENS),
    (0xAC00, HANGUL_TOKENS),  # Hangul syllables
    (0xD7B0, OTHER_SCRIPT_TOKENS),  # Jamo Extended-B, private use
    (0xF900, PER_CHARACTER_TOKENS),  # CJK compatibility ideographs
    (0xFB00, OTHER_SCRIPT_TOKENS),  # presentation forms (ligatures, Hebrew, Arabic)
    (0xFE00, 2.0),  # variation selectors (the emoji presentation of ❤️)
    (0xFE10, OTHER_SCRIPT_TOKENS),  # vertical forms, small forms, Arabic presentation forms-B
    (0xFF00, WIDE_PUNCTUATION_TOKENS),  # full-width forms
    (0xFF65, PER_CHARACTER_TOKENS),  # half-width Katakana
    (0xFFA0, WIDE_PUNCTUATION_TOKENS),  # half-width Hangul, full-width signs
    (0xFFF0, OTHER_SCRIPT_TOKENS),  # specials
    (0x10000, ASTRAL_TOKENS),  # emoji, symbols, historic scripts, mathematical letters
    (0x20000, ASTRAL_HAN_TOKENS),  # CJK Unified Ideographs Extensions B-H, compatibility
    (0x323B0, ASTRAL_TOKENS),  # tags, variation selectors supplement, private use
)
_STARTS = [start for start, _ in SCRIPT_TOKENS]
# What each non-ASCII character costs beyond the len/4 every character is counted at first.
_EXTRA = [each - 1 / LATIN_CHARS_PER_TOKEN for _, each in SCRIPT_TOKENS]
_DIGIT_EXTRA = DIGIT_TOKENS - 1 / LATIN_CHARS_PER_TOKEN
_PUNCTUATION_EXTRA = ASCII_PUNCTUATION_TOKENS - 1 / LATIN_CHARS_PER_TOKEN


def _kinds_table() -> bytes:
    """A ``bytes.translate`` table that writes each ASCII byte as its kind: lowercase ``l``,
    uppercase ``u``, digit ``d``, the four of base64 and UUIDs (``+ / = _ -``) ``r``, other
    punctuation ``p``, white space and control `` ``. The bytes of a non-ASCII character become
    `` `` too: they end a random-looking run, and the character is counted by its script."""
    table = bytearray(b" " * 256)
    for chars, kind in ((string.punctuation, "p"), ("+/=_-", "r"), (string.digits, "d"),
                        (string.ascii_lowercase, "l"), (string.ascii_uppercase, "u")):
        for char in chars:
            table[ord(char)] = ord(kind)
    return bytes(table)


_KINDS = _kinds_table()
# _KINDS again, as "a" for a character a run may have and " " for the others: a run's shortest
# form is one ``in`` away, which spares prose the search for runs.
_IN_RUN = bytes(ord("a") if chr(b) in "ludr" else ord(" ") for b in range(256))
_SHORTEST_RUN = b"a" * RANDOM_RUN_MIN
# _KINDS with punctuation turned to " ": its runs are what ``split`` gives.
_RUN_KINDS = bytes(b if chr(b) in "ludr" else ord(" ") for b in range(256))
_PIECE = re.compile(rb"u?l+|u+|d+")
_ASCII = bytes(range(128))
# The bulk of Chinese, Japanese, Korean and Russian text (kana and the BMP's Han, Hangul
# syllables, basic Cyrillic), each counted by one C-speed pass at its cost in SCRIPT_TOKENS, so
# that Counter only sees what is left.
_BULK = tuple((re.compile(pattern), each - 1 / LATIN_CHARS_PER_TOKEN) for pattern, each in (
    ("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]+", PER_CHARACTER_TOKENS),
    ("[\uac00-\ud7af]+", HANGUL_TOKENS),
    ("[\u0400-\u04ff]+", CYRILLIC_TOKENS)))


def _random_runs_extra(kinds: bytes) -> float:
    """What the random-looking runs of ``kinds`` (:data:`_KINDS` of a text) cost beyond the
    per-character counts: :data:`RANDOM_RUN_TOKENS` a character instead."""
    extra = 0.0
    for run in kinds.translate(_RUN_KINDS).split():
        if len(run) < RANDOM_RUN_MIN or len(_PIECE.findall(run)) * RANDOM_RUN_PIECE < len(run):
            continue  # words and identifiers
        counted = len(run) / LATIN_CHARS_PER_TOKEN + run.count(b"d") * _DIGIT_EXTRA \
            + run.count(b"r") * _PUNCTUATION_EXTRA
        extra += len(run) * RANDOM_RUN_TOKENS - counted
    return extra


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
    ``len/4`` for ASCII letters and spaces, :data:`ASCII_PUNCTUATION_TOKENS` per ASCII
    punctuation mark, :data:`DIGIT_TOKENS` per digit, :data:`RANDOM_RUN_TOKENS` per character of
    a random-looking run, and every other character by its script (:data:`SCRIPT_TOKENS`:
    :data:`PER_CHARACTER_TOKENS` per Han, kana or Thai character ...). It runs on every
    message, so the ASCII is sorted by ``bytes.translate``, the bulk of CJK and Cyrillic text is
    counted by one regular-expression pass each, and only the rest goes through
    :class:`Counter` (10-60 ns a character)."""
    encoded = text.encode("utf-8", "surrogatepass")
    kinds = encoded.translate(_KINDS)
    digits = kinds.count(b"d")
    tokens = len(text) / LATIN_CHARS_PER_TOKEN + digits * _DIGIT_EXTRA \
        + (kinds.count(b"p") + kinds.count(b"r")) * _PUNCTUATION_EXTRA
    # A random-looking run without a digit is rare enough to be counted as words.
    if digits and _SHORTEST_RUN in kinds.translate(_IN_RUN):
        tokens += _random_runs_extra(kinds)
    if len(encoded) > len(text):  # not all ASCII
        # No ASCII byte is part of a longer UTF-8 character: without them, the others remain.
        rest = encoded.translate(None, _ASCII).decode("utf-8", "surrogatepass")
        for pattern, extra in _BULK:
            shorter = pattern.sub("", rest)
            tokens += (len(rest) - len(shorter)) * extra
            rest = shorter
        for char, count in Counter(rest).items():
            tokens += count * _EXTRA[bisect_right(_STARTS, ord(char)) - 1]
    return tokens


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
