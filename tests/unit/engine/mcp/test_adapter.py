"""MCP tool -> engine Tool without a server: names, hints, schemas, results, specs."""

from __future__ import annotations

import re

import mcp_types as types
import pytest

from apps.engine.mcp import McpServerSpec, ToolNamer, tool_output, tool_spec
from apps.engine.messages import ImageBlock, TextBlock
from apps.engine.tools.base import Concurrency, ToolCategory

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PNG = "iVBORw0KGgo="


def tool(name: str = "t", **annotations: bool) -> types.Tool:
    return types.Tool(name=name, description="d", input_schema={"type": "object"},
                      annotations=types.ToolAnnotations(**annotations) if annotations else None)


def test_a_clean_name_is_kept_as_is() -> None:
    assert ToolNamer().name(0, "github", "search_issues") == "mcp__github__search_issues"


def test_a_name_with_other_characters_is_sanitized_and_hashed() -> None:
    name = ToolNamer().name(0, "my.server", "get file/v2")
    assert name.startswith("mcp__my_server__get_file_v2_")
    assert VALID.match(name)


def test_sanitizing_cannot_make_two_servers_collide() -> None:
    namer = ToolNamer()
    dotted = namer.name(0, "my.server", "search")
    underscored = namer.name(1, "my_server", "search")
    assert underscored == "mcp__my_server__search"
    assert dotted != underscored


def test_two_servers_with_the_same_name_get_distinct_names() -> None:
    namer = ToolNamer()
    first, second = namer.name(0, "files", "read"), namer.name(1, "files", "read")
    assert first == "mcp__files__read"
    assert second != first and second.startswith("mcp__files__read_") and VALID.match(second)


def test_double_underscores_cannot_make_two_pairs_collide() -> None:
    namer = ToolNamer()
    assert namer.name(0, "a__b", "c") != namer.name(1, "a", "b__c")


def test_long_names_are_cut_to_64_characters_and_stay_distinct() -> None:
    namer = ToolNamer()
    names = {namer.name(0, "s" * 40, f"{'t' * 40}{i}") for i in range(20)}
    assert len(names) == 20
    assert all(len(n) <= 64 and VALID.match(n) for n in names)


def test_names_are_deterministic_and_stable_for_the_run() -> None:
    one, two = ToolNamer(), ToolNamer()
    assert one.name(0, "x.y", "z") == two.name(0, "x.y", "z")
    assert one.name(0, "x.y", "z") == one.name(0, "x.y", "z")


@pytest.mark.parametrize(("hints", "concurrency", "approval"), [
    ({"read_only_hint": True}, Concurrency.ALWAYS, False),
    ({"read_only_hint": True, "destructive_hint": True}, Concurrency.ALWAYS, False),
    ({"read_only_hint": False, "destructive_hint": False}, Concurrency.NEVER, False),
    ({"destructive_hint": True}, Concurrency.NEVER, True),
    ({}, Concurrency.NEVER, True),  # the spec's defaults: not read-only, destructive
])
def test_hints_map_to_concurrency_and_approval(hints: dict[str, bool], concurrency: Concurrency,
                                               approval: bool) -> None:
    spec = tool_spec("mcp__s__t", "s", tool(**hints), call_timeout_s=30)
    assert spec.concurrency is concurrency
    assert spec.requires_approval is approval
    assert spec.category is ToolCategory.MCP


def test_the_input_schema_is_passed_through_unchanged() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"q": {"type": "string", "format": "uri"}}, "required": ["q"],
              "additionalProperties": False}
    listed = types.Tool(name="t", input_schema=schema)
    spec = tool_spec("mcp__s__t", "s", listed, call_timeout_s=30)
    assert spec.parameters == schema
    assert spec.description == "The t tool of the MCP server s."
    assert spec.timeout_s is not None and spec.timeout_s > 30


def test_text_parts_join_into_one_text() -> None:
    result = types.CallToolResult(content=[types.TextContent(text="a"),
                                           types.TextContent(text="b")])
    assert tool_output(result).content == "a\nb"


def test_images_stay_images_beside_the_text() -> None:
    result = types.CallToolResult(content=[types.TextContent(text="look"),
                                           types.ImageContent(data=PNG, mime_type="image/png")])
    content = tool_output(result).content
    assert content == [TextBlock(text="look"), ImageBlock(media_type="image/png", data=PNG)]


def test_an_image_type_no_provider_takes_is_described() -> None:
    result = types.CallToolResult(content=[types.ImageContent(data=PNG, mime_type="image/tiff")])
    assert tool_output(result).content == "[image (image/tiff, 8 bytes) not shown]"


def test_resources_and_links_become_text() -> None:
    text = types.EmbeddedResource(resource=types.TextResourceContents(
        uri="file:///a.txt", mime_type="text/plain", text="hello"))
    blob = types.EmbeddedResource(resource=types.BlobResourceContents(
        uri="file:///a.bin", mime_type="application/octet-stream", blob="AAAA"))
    link = types.ResourceLink(name="doc", uri="https://example.com/doc", description="a doc")
    audio = types.AudioContent(data="AAAA", mime_type="audio/wav")
    out = tool_output(types.CallToolResult(content=[text, blob, link, audio])).content
    assert out == ("[resource file:///a.txt (text/plain)]\nhello\n"
                   "[resource file:///a.bin (application/octet-stream): 3 bytes of binary data, "
                   "not shown]\n"
                   "[resource link: doc <https://example.com/doc>: a doc]\n"
                   "[audio (audio/wav, 3 bytes) not shown]")


def test_structured_content_is_json_text_when_there_is_no_text() -> None:
    only = types.CallToolResult(content=[], structured_content={"answer": 42})
    assert tool_output(only).content == '{"answer": 42}'
    both = types.CallToolResult(content=[types.TextContent(text="42")],
                                structured_content={"answer": 42})
    assert tool_output(both).content == "42"


def test_is_error_is_kept() -> None:
    result = types.CallToolResult(content=[types.TextContent(text="no")], is_error=True)
    assert tool_output(result).is_error is True


def test_an_empty_result_says_so() -> None:
    assert tool_output(types.CallToolResult(content=[])).content == \
        "(the tool returned no content)"


def test_a_spec_checks_its_transport_fields_and_hides_secrets() -> None:
    with pytest.raises(ValueError):
        McpServerSpec(name="s", transport="stdio", url="http://x")
    with pytest.raises(ValueError):
        McpServerSpec(name="s", transport="sse")
    with pytest.raises(TypeError):
        McpServerSpec(name="s", transport="sse", url="http://x", enabled_tools="echo")  # type: ignore[arg-type]
    spec = McpServerSpec(name="s", transport="streamable_http", url="https://x/mcp",
                         headers={"Authorization": "Bearer sekrit"}, enabled_tools=["a"])
    assert "sekrit" not in repr(spec) and "Authorization" in repr(spec)
    assert spec.allows("a") and not spec.allows("b")
