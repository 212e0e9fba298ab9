"""Raw HTML in Markdown shown as text, code left as written (the Markdown export, issue 14).

A Markdown viewer passes raw HTML through (CommonMark 0.31, sections 4.6 and 6.6), so
``<img onerror=...>`` in a message would run wherever the export is read. Every raw HTML
construct, and every autolink, starts with ``<``: each ``<`` outside code becomes ``&lt;``,
which a viewer shows as ``<``. Code keeps its text byte for byte (in code ``&lt;`` would show
as written). Code is what markdown-it finds with the CommonMark rules plus GitHub's tables: fenced
and indented code blocks by their lines, code spans by the backtick rule of section 6.1 within
each block of text.

Two guards keep the result sound whatever the input:

- it is parsed again, and if raw HTML is still there (a construct the code-span scan misread,
  such as a backtick inside a link's title or a table cell), every ``<`` is escaped, code's too:
  shown, never run;
- a fence still open at the end is closed, so the text neither swallows what follows it in the
  export nor lets a fence line of its own close an earlier one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["escape_raw_html"]

# A viewer's reading: raw HTML on (the default of CommonMark and of most viewers), tables on.
_VIEWER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_BLOCKS = MarkdownIt("commonmark", {"html": True}).enable(["table"]).disable("inline")
_BACKTICKS = re.compile(r"`+")
_LESS_THAN = re.compile(r"(\\*)<")
_CODE_BLOCKS = ("fence", "code_block")
_RAW_HTML = ("html_block", "html_inline")
_PROBE = "after"


def escape_raw_html(markdown: str) -> str:
    """``markdown`` with every ``<`` outside code as ``&lt;`` (one a backslash escaped loses
    that backslash: ``\\<`` and ``&lt;`` show the same), line endings as ``\\n``, and a fence
    left open closed. Text with neither ``<`` nor a fence character comes back unchanged."""
    text = markdown.replace("\r\n", "\n").replace("\r", "\n")
    if "<" not in text and "`" not in text and "~" not in text:
        return text
    result, raw = _finished(_escape_outside(text, _code_ranges(text, _BLOCKS.parse(text))))
    if raw:  # the code-span scan misread something: no code is kept as written
        result, _ = _finished(_escape_outside(text, []))
    return result


def _code_ranges(text: str, tokens: list[Token]) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the code in ``text``, in order, not overlapping;
    ``tokens``: its block tokens (inline ones carry only their lines here)."""
    starts = _line_starts(text)
    ranges: list[tuple[int, int]] = []
    for token in tokens:
        if token.map is None:
            continue
        first, last = starts[token.map[0]], starts[min(token.map[1], len(starts) - 1)]
        if token.type in _CODE_BLOCKS:
            ranges.append((first, last))
        elif token.type == "inline":
            ranges.extend((first + a, first + b) for a, b in _code_spans(text[first:last]))
    return sorted(ranges)


def _line_starts(text: str) -> list[int]:
    """Where each line starts, and the end of the text last (markdown-it's line numbers)."""
    return [0, *(m.end() for m in re.finditer("\n", text)), len(text)]


def _code_spans(block: str) -> Iterator[tuple[int, int]]:
    """The code spans of one block of text (CommonMark 6.1): a backtick string opens one that
    the next backtick string of the same length closes; a backslash before the opening string
    makes its first backtick literal (inside a span, backslashes are literal)."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(block)]
    floor = i = 0
    while i < len(runs):
        start, end = runs[i]
        backslashes = len(block[floor:start]) - len(block[floor:start].rstrip("\\"))
        start += backslashes % 2
        closer = next((j for j in range(i + 1, len(runs))
                       if runs[j][1] - runs[j][0] == end - start), None)
        if start == end or closer is None:
            i += 1
            continue
        yield start, runs[closer][1]
        floor, i = runs[closer][1], closer + 1


def _escape_outside(text: str, code: list[tuple[int, int]]) -> str:
    pieces, at = [], 0
    for start, end in code:
        if start < at:
            continue
        pieces += [_escape(text[at:start]), text[start:end]]
        at = end
    pieces.append(_escape(text[at:]))
    return "".join(pieces)


def _escape(text: str) -> str:
    """Each ``<`` as ``&lt;``; an odd run of backslashes before it loses its last one (it
    escaped the ``<``, which the entity now does)."""
    return _LESS_THAN.sub(lambda m: m.group(1)[: len(m.group(1)) // 2 * 2] + "&lt;", text)


def _finished(text: str) -> tuple[str, bool]:
    """``text`` with a top-level fence that runs to its end closed, and whether raw HTML is
    left in it. Open means a line put after the text (after a blank line) lands in the fence;
    the fence is then closed with its own opening string."""
    tokens = _VIEWER.parse(text + "\n\n" + _PROBE)
    last = next((t for t in reversed(tokens) if t.map is not None and t.level == 0), None)
    if last is not None and last.type == "fence":
        text += ("" if text.endswith("\n") else "\n") + last.markup
        tokens = _VIEWER.parse(text)
    return text, any(_is_raw_html(token) for token in _all(tokens))


def _all(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from token.children or ()


def _is_raw_html(token: Token) -> bool:
    return token.type in _RAW_HTML or (token.type == "link_open" and token.markup == "autolink")
