"""An answer's sources (issue 17): the providers' citation forms as one numbered list, http(s)
links only, titles as plain text; and Gemini's grounding kept on the assembled message."""

from __future__ import annotations

from apps.engine.events import ContentDelta, GroundingMetadata
from apps.engine.messages import TextBlock, ToolUseBlock
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.sources import MAX_TITLE, grounding_citation, sources


def _text(*citations: object) -> TextBlock:
    return TextBlock(text="x", citations=list(citations))  # type: ignore[arg-type]


def test_every_form_becomes_one_numbered_list_each_link_once() -> None:
    blocks = [
        _text({"type": "web_search_result_location", "url": "https://a.example/1",
               "title": "A one", "cited_text": "..."}),
        ToolUseBlock(id="c1", name="Bash"),
        _text("https://www.b.example/2",
              {"type": "url_citation", "url_citation": {"url": "https://c.example", "title": "C"}},
              {"type": "url_citation", "url": "https://d.example", "title": "D"},
              "https://a.example/1",  # already listed
              grounding_citation({"groundingChunks": [
                  {"web": {"uri": "https://vertexaisearch.cloud.google.com/r/1",
                           "title": "e.example"}},
                  {"retrievedContext": {"uri": "https://f.example", "title": "F"}},
                  {"web": {"uri": "https://g.example", "title": "G", "domain": "g.example"}}]})),
    ]
    assert sources(blocks) == [
        {"title": "A one", "site": "a.example", "url": "https://a.example/1"},
        {"title": "b.example", "site": "b.example", "url": "https://www.b.example/2"},
        {"title": "C", "site": "c.example", "url": "https://c.example"},
        {"title": "D", "site": "d.example", "url": "https://d.example"},
        {"title": "e.example", "site": "e.example",
         "url": "https://vertexaisearch.cloud.google.com/r/1"},
        {"title": "F", "site": "f.example", "url": "https://f.example"},
        {"title": "G", "site": "g.example", "url": "https://g.example"},
    ]


def test_only_http_links_with_a_host_and_nothing_that_breaks_out_are_kept() -> None:
    bad = ["javascript:alert(1)", "data:text/html,<b>x</b>", "ftp://h.example/f", "https://",
           "//h.example/x", 'https://h.example/"onmouseover="x', "https://h.example/<script>",
           "https://h.example/\nx", "https://h.example/\x00", "https://[::1/x",
           "https://h.example/" + "a" * 3000]
    cited = [_text(*bad), _text({"type": "char_location", "document_index": 0}),
             {"type": "text", "text": "x", "citations": [42, None, {"type": "url_citation"}]}]
    assert sources(cited) == []
    assert sources([_text("HTTPS://h.example/a b")]) == [
        {"title": "h.example", "site": "h.example", "url": "HTTPS://h.example/a%20b"}]


def test_titles_are_one_plain_line_of_bounded_length() -> None:
    found = sources([_text(
        {"type": "web_search_result_location", "url": "https://a.example",
         "title": "Line\none\u202e\x07  <b>bold</b>"},
        {"type": "web_search_result_location", "url": "https://b.example", "title": "t" * 999},
        {"type": "web_search_result_location", "url": "https://c.example", "title": ["x"]})])
    assert found[0]["title"] == "Line one <b>bold</b>"  # text, never markup: shown as text
    assert len(found[1]["title"]) == MAX_TITLE and found[1]["title"].endswith("…")
    assert found[2]["title"] == "c.example"


def test_the_stored_json_form_reads_the_same() -> None:
    block = _text("https://a.example")
    assert sources([block.model_dump(mode="json")]) == sources([block])
    assert sources([{"type": "tool_use", "citations": ["https://a.example"]}]) == []


def test_gemini_grounding_stays_on_the_message_once() -> None:
    metadata = {"groundingChunks": [{"web": {"uri": "https://a.example", "title": "A"}}]}
    assembler = MessageAssembler("gemini")
    for event in (ContentDelta(text="Answer"), GroundingMetadata(metadata)):
        assembler.feed(event)
    first, second = assembler.message(), assembler.message()
    assert first.content == second.content == [
        TextBlock(text="Answer", citations=[grounding_citation(metadata)])]
    assert assembler.blocks[0].citations is None  # the copy carries it, not the live block
    assert sources(first.content)[0]["url"] == "https://a.example"


def test_grounding_without_text_gets_a_block_of_its_own() -> None:
    assembler = MessageAssembler("gemini")
    assembler.feed(GroundingMetadata({"groundingChunks": []}))
    assert assembler.message().content == [
        TextBlock(text="", citations=[grounding_citation({"groundingChunks": []})])]
