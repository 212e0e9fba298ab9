"""``escape_raw_html`` (issue 14), one rule per test, then the property behind them: whatever the
text, a viewer that renders Markdown with HTML on finds no raw HTML in the result, and nothing
placed after it is swallowed by it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from apps.api.raw_html import escape_raw_html

VIEWER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
PROBE = "<p>after</p>"


def raw_html(markdown: str) -> list[str]:
    found = []
    for token in VIEWER.parse(markdown):
        for part in [token, *(token.children or [])]:
            if part.type in ("html_block", "html_inline") or part.markup == "autolink":
                found.append(part.content)
    return found


def test_html_outside_code_is_shown_as_text() -> None:
    assert escape_raw_html("a <b>bold</b> <!-- c --> <https://x.example>") == \
        "a &lt;b>bold&lt;/b> &lt;!-- c --> &lt;https://x.example>"


def test_code_spans_and_code_blocks_keep_their_text() -> None:
    text = "see `<b>` and ``a`<i>`b``\n\n```html\n<div>\n```\n\n    <pre>indented</pre>\n"
    assert escape_raw_html(text) == text


def test_an_escaped_backtick_opens_no_code_span() -> None:
    assert escape_raw_html("\\`<script>x</script>`") == "\\`&lt;script>x&lt;/script>`"


def test_a_backslash_escape_before_html_shows_the_same() -> None:
    assert escape_raw_html("\\<b> and \\\\<i>") == "&lt;b> and \\\\&lt;i>"


def test_a_fence_left_open_is_closed() -> None:
    assert escape_raw_html("````\n<b>\n```") == "````\n<b>\n```\n````"
    assert escape_raw_html("~~~\n<b>\n") == "~~~\n<b>\n~~~"


def test_a_code_span_a_table_would_split_is_not_trusted() -> None:
    """GitHub splits table cells before it looks for code spans: the HTML between two cells is
    not code there, so it is escaped (and the span's text with it)."""
    text = "| `x | <script>alert(1)</script> | y` |\n| --- | --- | --- |\n| a | b | c |"
    escaped = escape_raw_html(text)
    assert raw_html(escaped) == [] and "&lt;script>" in escaped


def test_text_without_html_or_fences_is_returned_as_is() -> None:
    assert escape_raw_html("3 > 2 & *so* [it](https://x.example) goes") == \
        "3 > 2 & *so* [it](https://x.example) goes"


FRAGMENTS = st.sampled_from([
    "<b>", "</b>", "<img src=x onerror=alert(1)>", "<!--", "-->", "<https://x.example>",
    "<script>", "<pre>", "`", "``", "```", "~~~", "\\", "\n", "\n\n", "    ", "> ", "- ",
    "1. ", "[a](", '"', ")", "|", "---", "text", " ", "*", "&lt;", "<", ">",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(FRAGMENTS, max_size=30).map("".join))
def test_no_text_leaves_raw_html_or_swallows_what_follows(text: str) -> None:
    escaped = escape_raw_html(text)
    assert raw_html(escaped) == []
    assert raw_html(escaped + "\n\n" + PROBE) == [PROBE]
