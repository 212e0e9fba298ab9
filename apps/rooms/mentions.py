"""Whether a person's message calls the agent in a ``mention`` conversation (DESIGN 3.2).

A mention is ``@`` (or the full-width ``＠`` of a Chinese or Japanese keyboard) plus the team's
agent handle (``@agent`` always works), case-insensitive, at a word boundary, not inside a code
span or an e-mail address. Text and handle are compared in NFC. Code is found with CommonMark's
rules (https://spec.commonmark.org/0.31.2/): a code span is a run of N backticks up to the next
run of exactly N (6.1); a fenced block runs from a line of three or more backticks or tildes to
a closing fence of the same character at least as long, or to the end of the text (4.5).
Indented code blocks are not treated as code: chat text is rarely indented on purpose.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

__all__ = ["AGENT_HANDLE", "mentions_agent"]

AGENT_HANDLE = "agent"
"""The handle that calls the agent in every team, whatever name the team gave it."""

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})[^\n]*(?:\n.*?)??"
                    r"(?:\n {0,3}(?P=fence)[`~]*[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_TICKS = re.compile(r"`+")


def _code_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each code span: a run of backticks up to the next run of the same
    length. Runs are paired in one pass with a per-length index (a regex with a lazy ``.+?``
    would rescan the text for every unclosed run: quadratic on a hostile message)."""
    runs = [match.span() for match in _TICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        start, end = runs[i]
        same = by_length[end - start]
        k = bisect_right(same, i)
        if k == len(same):  # no closing run: these backticks are literal
            i += 1
            continue
        spans.append((start, runs[same[k]][1]))
        i = same[k] + 1
    return spans


def _without_code(text: str) -> str:
    """``text`` with fenced code blocks and code spans blanked out (blocks first: a fence's
    backticks would otherwise pair up as spans)."""
    text = _FENCE.sub(" ", text)
    kept, last = [], 0
    for start, end in _code_spans(text):
        kept += [text[last:start], " "]
        last = end
    return "".join([*kept, text[last:]])


def _mention(handle: str) -> re.Pattern[str]:
    names = {AGENT_HANDLE, unicodedata.normalize("NFC", handle).lower()}
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    # Before the @: not a character an e-mail's local part could end with (ASCII: Chinese and
    # Japanese put a mention right after a word, with no space). After the handle: no ASCII
    # word character, and no ".word" (that would be a domain, as in @agent.io); a Chinese
    # handle is followed by the rest of the sentence with no space (@助手帮我看看).
    return re.compile(rf"(?<![A-Za-z0-9_.+%@＠-])[@＠](?:{alternatives})(?![A-Za-z0-9_-])"
                      r"(?!\.[A-Za-z0-9])", re.IGNORECASE)


def mentions_agent(text: str, handle: str = AGENT_HANDLE) -> bool:
    """Whether ``text`` mentions the agent: ``@agent`` or ``@<handle>`` (the team's name for
    it, ``Team.agent_handle``, in any script; any characters are taken literally) outside code
    and e-mail addresses."""
    text = unicodedata.normalize("NFC", text)
    return _mention(handle).search(_without_code(text)) is not None
