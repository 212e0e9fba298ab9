"""Anthropic request mapping: one golden body per rule (exact dict equality on the body)."""

from __future__ import annotations

from typing import Any

import pytest

from apps.engine.messages import (
    ChatRequest,
    ImageBlock,
    Message,
    ReasoningParams,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from apps.engine.providers.anthropic import build_body
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.replay import replay_events
from tests.conftest import FIXTURES

CACHE = {"type": "ephemeral"}


def body_for(messages: list[Message], **kwargs: Any) -> dict[str, Any]:
    return build_body(ChatRequest(model="claude-sonnet-5", messages=messages, **kwargs))


def golden(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body = {"model": "claude-sonnet-5", "messages": messages, "stream": True,
            "max_tokens": 8192, "cache_control": CACHE}
    body.update(extra)
    return body


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def result(call_id: str, content: Any = None, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, **extra}
    if content is not None:
        block["content"] = content
    return block


NOT_EXECUTED = {"is_error": True, "content": "This tool call was not executed."}


# -- the envelope ----------------------------------------------------------------------------


def test_minimal_request_streams_with_default_max_tokens_and_automatic_caching() -> None:
    assert body_for([Message(role="user", content="hi")]) == golden([user("hi")])


def test_system_prompt_is_top_level_and_leading_system_messages_join_it() -> None:
    messages = [Message(role="system", content="Be brief."), Message(role="user", content="hi")]
    body = body_for(messages, system="You are confab.")
    assert body == golden([user("hi")], system="You are confab.\n\nBe brief.")


def test_explicit_max_tokens_is_sent() -> None:
    assert body_for([Message(role="user", content="hi")], max_tokens=1000) == {
        **golden([user("hi")]), "max_tokens": 1000}


def test_temperature_is_sent_without_thinking() -> None:
    body = body_for([Message(role="user", content="hi")], temperature=0.2)
    assert body == golden([user("hi")], temperature=0.2)


def test_disable_context_caching_drops_cache_control() -> None:
    body = body_for([Message(role="user", content="hi")],
                    reasoning=ReasoningParams(disable_context_caching=True))
    expected = golden([user("hi")])
    del expected["cache_control"]
    assert body == expected


def test_tools_become_name_description_input_schema() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}},
              "required": ["path"]}
    tools = [ToolDefinition(name="Read", description="Read a file", parameters=schema),
             ToolDefinition(name="Now", parameters={"properties": {}})]
    body = body_for([Message(role="user", content="hi")], tools=tools)
    assert body == golden([user("hi")], tools=[
        {"name": "Read", "description": "Read a file", "input_schema": schema},
        {"name": "Now", "input_schema": {"type": "object", "properties": {}}},
    ])


def test_web_search_server_tool_uses_the_web_search_tool_type() -> None:
    body = body_for([Message(role="user", content="news?")],
                    server_tools=["web_search", "url_context"])  # url_context is Gemini's
    assert body == golden([user("news?")],
                          tools=[{"type": "web_search_20250305", "name": "web_search"}])


# -- reasoning params ------------------------------------------------------------------------


def reasoning_body(max_tokens: int | None = None, temperature: float | None = None,
                   **params: Any) -> dict[str, Any]:
    body = body_for([Message(role="user", content="hi")], max_tokens=max_tokens,
                    temperature=temperature, reasoning=ReasoningParams(**params))
    assert body.pop("messages") == [user("hi")]
    assert body.pop("cache_control") == CACHE
    assert body.pop("model") == "claude-sonnet-5"
    assert body.pop("stream") is True
    return body


def test_enabled_thinking_sends_its_budget_below_max_tokens() -> None:
    assert reasoning_body(max_tokens=16000, thinking_type="enabled", thinking_budget=10000) == {
        "max_tokens": 16000, "thinking": {"type": "enabled", "budget_tokens": 10000}}


def test_a_budget_alone_enables_thinking() -> None:
    assert reasoning_body(max_tokens=16000, thinking_budget=2048) == {
        "max_tokens": 16000, "thinking": {"type": "enabled", "budget_tokens": 2048}}


def test_the_budget_is_at_least_1024() -> None:
    assert reasoning_body(max_tokens=8000, thinking_type="enabled", thinking_budget=100) == {
        "max_tokens": 8000, "thinking": {"type": "enabled", "budget_tokens": 1024}}


def test_an_explicit_cap_wins_over_a_larger_budget() -> None:
    assert reasoning_body(max_tokens=4000, thinking_type="enabled", thinking_budget=9000) == {
        "max_tokens": 4000, "thinking": {"type": "enabled", "budget_tokens": 3999}}


def test_without_a_cap_max_tokens_grows_past_the_budget() -> None:
    assert reasoning_body(thinking_type="enabled", thinking_budget=30000) == {
        "max_tokens": 34096, "thinking": {"type": "enabled", "budget_tokens": 30000}}
    assert reasoning_body(thinking_type="enabled") == {
        "max_tokens": 8192, "thinking": {"type": "enabled", "budget_tokens": 4096}}


def test_a_cap_too_small_for_any_thinking_is_raised_just_enough() -> None:
    assert reasoning_body(max_tokens=500, thinking_type="enabled") == {
        "max_tokens": 2048, "thinking": {"type": "enabled", "budget_tokens": 1024}}


@pytest.mark.parametrize("max_tokens", [None, 1025, 2000, 64000])
@pytest.mark.parametrize("budget", [None, 0, 1, 1024, 5000, 100000])
def test_budget_is_always_valid(max_tokens: int | None, budget: int | None) -> None:
    body = reasoning_body(max_tokens=max_tokens, thinking_type="enabled", thinking_budget=budget)
    assert 1024 <= body["thinking"]["budget_tokens"] < body["max_tokens"]


def test_adaptive_thinking_ignores_the_budget() -> None:
    assert reasoning_body(thinking_type="adaptive", thinking_budget=5000) == {
        "max_tokens": 8192, "thinking": {"type": "adaptive"}}


def test_effort_goes_in_output_config() -> None:
    assert reasoning_body(thinking_type="adaptive", effort="high") == {
        "max_tokens": 8192, "thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}
    assert reasoning_body(effort="max") == {"max_tokens": 8192,
                                            "output_config": {"effort": "max"}}


@pytest.mark.parametrize(("effort", "sent"), [("minimal", "low"), ("low", "low"),
                                              ("medium", "medium"), ("xhigh", "xhigh")])
def test_effort_levels_map_to_anthropic_levels(effort: str, sent: str) -> None:
    assert reasoning_body(effort=effort)["output_config"] == {"effort": sent}


def test_effort_none_has_no_anthropic_equivalent() -> None:
    assert reasoning_body(effort="none") == {"max_tokens": 8192}


def test_disabled_thinking_is_explicit_and_never_sent_with_effort() -> None:
    assert reasoning_body(thinking_type="disabled", effort="high", thinking_budget=4000) == {
        "max_tokens": 8192, "thinking": {"type": "disabled"}}


@pytest.mark.parametrize("kind", ["enabled", "adaptive"])
def test_temperature_is_never_sent_with_thinking(kind: str) -> None:
    body = reasoning_body(max_tokens=8000, temperature=0.7, thinking_type=kind)
    assert "temperature" not in body


def test_temperature_is_kept_when_thinking_is_disabled() -> None:
    assert reasoning_body(temperature=0.7, thinking_type="disabled") == {
        "max_tokens": 8192, "thinking": {"type": "disabled"}, "temperature": 0.7}


def test_fields_of_other_providers_are_ignored() -> None:
    assert reasoning_body(thinking_level="high", text_verbosity="low", enabled_search=True,
                          url_context=True, include_thoughts=True) == {"max_tokens": 8192}


# -- history: Anthropic artefacts round-trip -------------------------------------------------


def test_thinking_goes_back_only_with_its_signature() -> None:
    history = [
        Message(role="user", content="hi"),
        Message(role="assistant", provider="anthropic", content=[
            ThinkingBlock(thinking="signed", signature="SIG"),
            ThinkingBlock(thinking="cut off before its signature"),
            TextBlock(text="Hello"),
        ]),
        Message(role="user", content="again"),
    ]
    assert body_for(history)["messages"] == [
        user("hi"),
        assistant({"type": "thinking", "thinking": "signed", "signature": "SIG"}, text("Hello")),
        user("again"),
    ]


def test_an_empty_thinking_with_a_signature_goes_back() -> None:
    # Newer models omit the thinking text by default; the signed block must still go back.
    history = [Message(role="user", content="hi"),
               Message(role="assistant", provider="anthropic", content=[
                   ThinkingBlock(thinking="", signature="SIG"), TextBlock(text="ok")]),
               Message(role="user", content="more")]
    assert body_for(history)["messages"][1] == assistant(
        {"type": "thinking", "thinking": "", "signature": "SIG"}, text("ok"))


def test_redacted_thinking_server_tool_blocks_and_citations_go_back_verbatim() -> None:
    server_use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                  "input": {"query": "q"}}
    server_result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                     "content": [{"type": "web_search_result", "url": "https://x.test",
                                  "title": "X", "encrypted_content": "ENC", "page_age": None}]}
    citation = {"type": "web_search_result_location", "cited_text": "c", "url": "https://x.test",
                "title": "X", "encrypted_index": "IDX"}
    history = [
        Message(role="user", content="q"),
        Message(role="assistant", provider="anthropic", content=[
            RedactedThinkingBlock(data="REDACTED"),
            ServerToolBlock(raw=server_use),
            ServerToolBlock(raw=server_result),
            TextBlock(text="Answer.", citations=[citation]),
        ]),
        Message(role="user", content="thanks"),
    ]
    assert body_for(history)["messages"][1] == assistant(
        {"type": "redacted_thinking", "data": "REDACTED"}, server_use, server_result,
        {"type": "text", "text": "Answer.", "citations": [citation]})


def test_a_streamed_response_goes_back_unchanged() -> None:
    """Fixture -> events -> assembled Message -> next request: every artefact in place."""
    events, error = replay_events("anthropic", [
        (FIXTURES / "anthropic" / "thinking-tool-use.sse").read_bytes()])
    assert error is None
    assembler = MessageAssembler("anthropic")
    for event in events:
        assembler.feed(event)
    answer = assembler.message()
    call = answer.tool_calls()[0]
    history = [Message(role="user", content="version?"), answer,
               Message(role="tool", content=[ToolResultBlock(tool_use_id=call.id, name=call.name,
                                                             content="1.2.3")])]
    signature = (FIXTURES / "anthropic" / "thinking-tool-use.sse").read_text()
    messages = body_for(history)["messages"]
    thinking = messages[1]["content"][0]
    assert thinking["type"] == "thinking" and thinking["signature"] in signature
    assert thinking["thinking"].startswith("The user wants me to:")
    assert messages[1]["content"][1] == tool_use("toolu_01825dXWLSoJwCst1qTsiWdb",
                                                 "fixed_version", {})
    assert messages[2] == {"role": "user", "content": [
        result("toolu_01825dXWLSoJwCst1qTsiWdb", "1.2.3")]}


@pytest.mark.parametrize("fixture", ["web-search-citations.sse", "web-search-citations-2.sse",
                                     "redacted-thinking.sse", "prompt-cache-code-execution.sse"])
def test_server_tool_and_redacted_blocks_of_a_recording_go_back_as_received(fixture: str) -> None:
    events, error = replay_events("anthropic", [(FIXTURES / "anthropic" / fixture).read_bytes()])
    assert error is None
    assembler = MessageAssembler("anthropic")
    for event in events:
        assembler.feed(event)
    answer = assembler.message()
    sent = body_for([Message(role="user", content="go"), answer,
                     Message(role="user", content="next")])["messages"][1]["content"]
    kept = [b for b in sent if b["type"] not in ("text",)]
    expected = [b.raw if isinstance(b, ServerToolBlock) else {"type": b.type, "data": b.data}
                for b in answer.content if isinstance(b, ServerToolBlock | RedactedThinkingBlock)]
    assert kept == expected
    assert "".join(b["text"] for b in sent if b["type"] == "text") == answer.text()


# -- history: another provider's artefacts are dropped ---------------------------------------


def test_another_providers_reasoning_artefacts_are_dropped_and_calls_kept() -> None:
    history = [
        Message(role="user", content="go"),
        Message(role="assistant", provider="gemini", content=[
            ThinkingBlock(thinking="gemini thought", thought_signature="GSIG"),
            TextBlock(text="", thought_signature="GSIG2"),
            ServerToolBlock(raw={"executableCode": {"code": "print(1)"}}),
            TextBlock(text="Calling.", thought_signature="GSIG3"),
            ToolUseBlock(id="call_1", name="Bash", input={"cmd": "ls"}, thought_signature="GS"),
        ]),
        Message(role="tool", content=[ToolResultBlock(tool_use_id="call_1", content="a.txt")]),
        Message(role="assistant", provider="openai", reasoning_content="deepseek thoughts",
                content=[ThinkingBlock(thinking="looks like claude", signature="NOT_OURS"),
                         TextBlock(text="Done.", citations=[{"url": "https://x.test"}])]),
        Message(role="user", content="thanks"),
    ]
    assert body_for(history)["messages"] == [
        user("go"),
        assistant(text("Calling."), tool_use("call_1", "Bash", {"cmd": "ls"})),
        {"role": "user", "content": [result("call_1", "a.txt")]},
        assistant(text("Done.")),
        user("thanks"),
    ]


def test_an_assistant_message_left_empty_by_the_drop_disappears() -> None:
    history = [Message(role="user", content="a"),
               Message(role="assistant", provider="openai",
                       content=[ThinkingBlock(thinking="only reasoning")]),
               Message(role="user", content="b")]
    assert body_for(history)["messages"] == [
        {"role": "user", "content": [text("a"), text("b")]}]


# -- history: shape ---------------------------------------------------------------------------


def test_tool_role_messages_become_user_tool_results() -> None:
    history = [
        Message(role="user", content="look"),
        Message(role="assistant", provider="anthropic", content=[
            ToolUseBlock(id="toolu_A", name="Read", input={"path": "a"}),
            ToolUseBlock(id="toolu_B", name="Read", input={"path": "b"})]),
        Message(role="tool", content=[
            ToolResultBlock(tool_use_id="toolu_A", content="A"),
            ToolResultBlock(tool_use_id="toolu_B", content="boom", is_error=True)]),
    ]
    assert body_for(history)["messages"] == [
        user("look"),
        assistant(tool_use("toolu_A", "Read", {"path": "a"}),
                  tool_use("toolu_B", "Read", {"path": "b"})),
        {"role": "user", "content": [result("toolu_A", "A"),
                                     result("toolu_B", "boom", is_error=True)]},
    ]


def test_tool_result_content_blocks_keep_text_and_images_and_empty_content_is_omitted() -> None:
    history = [
        Message(role="user", content="shot"),
        Message(role="assistant", provider="anthropic", content=[
            ToolUseBlock(id="t1", name="Shot", input={}),
            ToolUseBlock(id="t2", name="Noop", input={})]),
        Message(role="tool", content=[
            ToolResultBlock(tool_use_id="t1", content=[
                TextBlock(text="page 1"), ImageBlock(media_type="image/png", data="PNG")]),
            ToolResultBlock(tool_use_id="t2", content="")]),
    ]
    assert body_for(history)["messages"][2] == {"role": "user", "content": [
        result("t1", [text("page 1"), {"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": "PNG"}}]),
        result("t2")]}


def test_user_images_are_base64_sources() -> None:
    history = [Message(role="user", content=[TextBlock(text="what is this?"),
                                             ImageBlock(media_type="image/jpeg", data="JPG")])]
    assert body_for(history)["messages"] == [{"role": "user", "content": [
        text("what is this?"),
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                     "data": "JPG"}}]}]


def test_empty_text_blocks_are_never_sent() -> None:
    history = [Message(role="user", content=[TextBlock(text=""), TextBlock(text="hi")]),
               Message(role="assistant", provider="anthropic",
                       content=[TextBlock(text=""), TextBlock(text="yo")]),
               Message(role="user", content="ok")]
    assert body_for(history)["messages"] == [user("hi"), assistant(text("yo")), user("ok")]


def test_whitespace_text_is_kept_beside_real_text_and_dropped_when_all_text_is_blank() -> None:
    history = [Message(role="user", content="hi"),
               Message(role="assistant", provider="anthropic",
                       content=[TextBlock(text="Cited."), TextBlock(text="\n\n"),
                                TextBlock(text="More.")]),
               Message(role="user", content=[TextBlock(text="  ")]),
               Message(role="assistant", provider="anthropic",
                       content=[TextBlock(text="\n"), ToolUseBlock(id="t", name="T", input={})]),
               Message(role="tool", content=[ToolResultBlock(tool_use_id="t", content=[
                   TextBlock(text=" ")])])]
    assert body_for(history)["messages"] == [
        user("hi"),
        assistant(text("Cited."), text("\n\n"), text("More."), tool_use("t", "T", {})),
        {"role": "user", "content": [result("t")]},
    ]


def test_a_leading_assistant_message_gets_a_user_continue_before_it() -> None:
    history = [Message(role="assistant", provider="anthropic", content="I start."),
               Message(role="user", content="ok")]
    assert body_for(history)["messages"] == [user("Continue."), assistant(text("I start.")),
                                             user("ok")]


def test_a_trailing_assistant_message_gets_a_user_continue_after_it() -> None:
    # A final assistant turn would be a prefill: rejected with thinking and by newer models.
    history = [Message(role="user", content="write"),
               Message(role="assistant", provider="anthropic", content="Partial answer ",
                       status="cancelled")]
    assert body_for(history)["messages"] == [user("write"), assistant(text("Partial answer ")),
                                             user("Continue.")]


def test_an_empty_history_still_sends_one_user_turn() -> None:
    assert body_for([])["messages"] == [user("Continue.")]


def test_a_cancelled_message_with_unsigned_thinking_and_an_unrun_call_stays_valid() -> None:
    history = [
        Message(role="user", content="do it"),
        Message(role="assistant", provider="anthropic", status="cancelled", content=[
            ThinkingBlock(thinking="first", signature="S1"),
            ToolUseBlock(id="toolu_1", name="Bash", input={"cmd": "ls"}),
            ThinkingBlock(thinking="interrupted mid-thou"),
        ]),
        Message(role="user", content="stop, do something else"),
    ]
    assert body_for(history)["messages"] == [
        user("do it"),
        assistant({"type": "thinking", "thinking": "first", "signature": "S1"},
                  tool_use("toolu_1", "Bash", {"cmd": "ls"})),
        {"role": "user", "content": [result("toolu_1", **NOT_EXECUTED),
                                     text("stop, do something else")]},
    ]


def test_a_history_ending_in_a_call_gets_its_missing_result() -> None:
    history = [Message(role="user", content="go"),
               Message(role="assistant", provider="anthropic",
                       content=[ToolUseBlock(id="t1", name="Bash", input={})])]
    assert body_for(history)["messages"] == [
        user("go"), assistant(tool_use("t1", "Bash", {})),
        {"role": "user", "content": [result("t1", **NOT_EXECUTED)]}]


def test_orphan_and_duplicate_tool_results_are_dropped() -> None:
    history = [
        Message(role="user", content="go"),
        Message(role="assistant", provider="anthropic",
                content=[ToolUseBlock(id="t1", name="Bash", input={})]),
        Message(role="tool", content=[ToolResultBlock(tool_use_id="t1", content="first"),
                                      ToolResultBlock(tool_use_id="t1", content="again"),
                                      ToolResultBlock(tool_use_id="ghost", content="?")]),
    ]
    assert body_for(history)["messages"][2] == {"role": "user",
                                                "content": [result("t1", "first")]}


def test_a_user_turn_of_only_orphan_results_vanishes_and_its_neighbours_merge() -> None:
    history = [
        Message(role="user", content="go"),
        Message(role="assistant", provider="anthropic", content="Thinking about it."),
        Message(role="tool", content=[ToolResultBlock(tool_use_id="ghost", content="?")]),
        Message(role="assistant", provider="anthropic",
                content=[ToolUseBlock(id="t1", name="Bash", input={})]),
        Message(role="tool", content=[ToolResultBlock(tool_use_id="t1", content="ok")]),
    ]
    assert body_for(history)["messages"] == [
        user("go"),
        assistant(text("Thinking about it."), tool_use("t1", "Bash", {})),
        {"role": "user", "content": [result("t1", "ok")]},
    ]


@pytest.mark.parametrize("roles", [
    "uuu", "aaa", "uaau", "auua", "utu", "atat", "suasu", "uatuaatu", "ttt", "a", "s", "usus",
])
def test_roles_always_alternate_starting_and_ending_with_user(roles: str) -> None:
    """Property over role sequences (u user, a assistant with a call, t tool result,
    s system): alternation, user first and last, every call answered first in the next turn."""
    history: list[Message] = []
    for i, role in enumerate(roles):
        if role == "u":
            history.append(Message(role="user", content=f"u{i}"))
        elif role == "s":
            history.append(Message(role="system", content=f"s{i}"))
        elif role == "a":
            history.append(Message(role="assistant", provider="anthropic", content=[
                TextBlock(text=f"a{i}"), ToolUseBlock(id=f"c{i}", name="T", input={})]))
        else:
            history.append(Message(role="tool", content=[
                ToolResultBlock(tool_use_id=f"c{i - 1}", content=f"r{i}")]))
    messages = body_for(history)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2) + [
        "user"]
    for before, after in zip(messages, messages[1:], strict=False):
        calls = [b["id"] for b in before["content"] if b["type"] == "tool_use"]
        firsts = [b.get("tool_use_id") for b in after["content"][:len(calls)]]
        assert firsts == calls
        assert sum(b["type"] == "tool_result" for b in after["content"]) == len(calls)
