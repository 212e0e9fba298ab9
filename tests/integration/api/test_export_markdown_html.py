"""The Markdown export shows raw HTML as text (issue 14): a viewer that renders Markdown with
HTML on (most do) runs no tag from a message, its thinking or a tool's output, and code spans
and fenced blocks still show exactly what was written.

Each export is rendered here the way such a viewer would: markdown-it's CommonMark with raw
HTML allowed. The only raw HTML left must be the export's own ``<details>`` around thinking."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from apps.engine.messages import Message as EngineMessage
from apps.engine.messages import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from apps.rooms.models import Message
from apps.rooms.transcript import message_fields
from tests.integration.api.streams import body

pytestmark = pytest.mark.django_db

VIEWER = MarkdownIt("commonmark", {"html": True})
OURS = {"<details>", "<summary>Thinking</summary>", "</details>"}
ATTACK = '<img src=x onerror="alert(1)"> <script>alert(2)</script>'
CODE_SPAN = "`<b>bold</b>`"
FENCE = "```html\n<div onclick=\"go()\">hi</div>\n```"
PLAIN = "Plain *Markdown*, a [link](https://example.com), 3 > 2 and a & b.\n\n> quoted"


def _store(conversation, position: int, message: EngineMessage, **columns) -> None:
    Message.objects.create(conversation=conversation, position=position,
                           **{**message_fields(message), **columns})


def _export(token_client, alice, conversation) -> str:
    return body(token_client(alice).get(f"/api/conversations/{conversation.pk}/export.md"))


def _raw_html(markdown: str) -> list[str]:
    """Every piece of raw HTML the viewer would pass through, ours excepted."""
    found = []
    for token in VIEWER.parse(markdown):
        for part in [token, *(token.children or [])]:
            if part.type in ("html_block", "html_inline"):
                found += [line for line in part.content.splitlines()
                          if line.strip() and line.strip() not in OURS]
    return found


def _rendered(markdown: str) -> str:
    return VIEWER.render(markdown)


def test_html_in_messages_is_text_and_their_code_stays_as_written(token_client, alice,
                                                                   conversation) -> None:
    text = f"Look: {ATTACK}\n\n<div>\n*block*\n</div>\n\nInline {CODE_SPAN}.\n\n{FENCE}"
    _store(conversation, 1, EngineMessage(role="user", content=text), author=alice,
           author_name="Alice")
    _store(conversation, 2, EngineMessage(role="assistant", content=[TextBlock(text=text)]))
    _store(conversation, 3, EngineMessage(role="assistant", content=PLAIN))
    markdown = _export(token_client, alice, conversation)
    assert PLAIN in markdown  # nothing to escape: as written
    assert _raw_html(markdown) == []
    html = _rendered(markdown)
    assert "<img" not in html and "<script" not in html and "<div>" not in html
    assert html.count("<code>&lt;b&gt;bold&lt;/b&gt;</code>") == 2  # the spans, as written
    assert html.count('<code class="language-html">&lt;div onclick=&quot;go()&quot;&gt;'
                      'hi&lt;/div&gt;\n</code>') == 2
    assert markdown.count(FENCE) == 2 and markdown.count(CODE_SPAN) == 2  # byte for byte
    assert "&lt;img src=x" in markdown  # shown, not dropped


def test_html_in_thinking_is_text_and_its_code_stays_as_written(token_client, alice,
                                                                conversation) -> None:
    thinking = f"Maybe {ATTACK}</details>\n\n{FENCE}"
    _store(conversation, 1, EngineMessage(role="assistant", content=[
        ThinkingBlock(thinking=thinking), TextBlock(text="Done.")]))
    _store(conversation, 2, EngineMessage(role="assistant", content="Again."),
           reasoning_content=f"Reasoning {ATTACK} {CODE_SPAN}")
    markdown = _export(token_client, alice, conversation)
    assert _raw_html(markdown) == []
    html = _rendered(markdown)
    assert "<img" not in html and "<script" not in html and html.count("</details>") == 2
    assert '<code class="language-html">&lt;div onclick' in html
    assert "<code>&lt;b&gt;bold&lt;/b&gt;</code>" in html


def test_html_in_tool_calls_and_their_output_is_text(token_client, alice,
                                                     conversation) -> None:
    # A tool name is whatever the model sent: a blank line in it must not end its code span.
    name = f"Read\n\n{ATTACK}"
    _store(conversation, 1, EngineMessage(role="assistant", content=[
        ToolUseBlock(id="call\n\n<b>1</b>", name=name, input={"html": ATTACK})]))
    _store(conversation, 2, EngineMessage(role="tool", content=[
        ToolResultBlock(tool_use_id="call\n\n<b>1</b>", name=name,
                        content=f"{ATTACK}\n```\n{ATTACK}"),
        ToolResultBlock(tool_use_id="t2", name="Bash", content=[TextBlock(text=ATTACK)],
                        is_error=True)]))
    markdown = _export(token_client, alice, conversation)
    assert _raw_html(markdown) == []
    html = _rendered(markdown)
    assert "<img" not in html and "<script" not in html and "<b>" not in html


def test_an_unclosed_fence_neither_swallows_nor_unlocks_what_follows(token_client, alice,
                                                                      conversation) -> None:
    """The first message leaves a fence open; alone, the second's HTML is inside its own fence,
    but after the first one's the second's fence line would close that one instead."""
    _store(conversation, 1, EngineMessage(role="user", content="```\nopen"), author=alice,
           author_name="Alice")
    _store(conversation, 2, EngineMessage(role="user", content=f"```\n{ATTACK}"),
           author=alice, author_name="Alice")
    markdown = _export(token_client, alice, conversation)
    assert _raw_html(markdown) == []
    html = _rendered(markdown)
    assert "<img" not in html and "<script" not in html
    assert len(re.findall(r"<h3>Alice · ", html)) == 2  # both headings are headings

