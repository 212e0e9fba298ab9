"""The Gemini adapter: request bodies (golden, exact dict equality, one rule per test), the
stream translator, thinking caps, and HTTP through httpx2.MockTransport."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import (
    ContentDelta,
    GroundingMetadata,
    MessageEnd,
    MessageStart,
    ReasoningDelta,
    ServerToolBlockEvent,
    ThoughtSignature,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
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
    Usage,
)
from apps.engine.providers import base
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.base import ModelInfo, ProviderSettings, new_tool_call_id
from apps.engine.providers.gemini import GeminiProvider, GeminiTranslator
from apps.engine.providers.gemini.request import SKIP_SIGNATURE, build_body
from apps.engine.providers.gemini.thinking import thinking_config
from apps.engine.providers.sse import SSEDecoder, SSEEvent
from apps.engine.replay import replay, replay_events
from tests.conftest import FIXTURES

BASE = "https://generativelanguage.googleapis.com"


# -- helpers -----------------------------------------------------------------------------------
def user(text: str) -> Message:
    return Message(role="user", content=text)


def body(*messages: Message, model: str = "gemini-2.5-flash", **kw: Any) -> dict[str, Any]:
    return build_body(ChatRequest(model=model, messages=list(messages), **kw))


def sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


def translate(*chunks: dict[str, Any]) -> list[Any]:
    translator = GeminiTranslator()
    events: list[Any] = []
    for chunk in chunks:
        events += translator.feed(SSEEvent(data=json.dumps(chunk)))
    return events + translator.finish()


def candidate(*parts: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [{**cand, **extra}]}


def message_from(raw: bytes) -> Message:
    events, error = replay_events("gemini", [raw])
    assert error is None
    assembler = MessageAssembler("gemini")
    for event in events:
        assembler.feed(event)
    return assembler.message()


def provider(transport: httpx2.MockTransport, base_url: str = BASE) -> GeminiProvider:
    settings = ProviderSettings(protocol="gemini", base_url=base_url, api_key="KEY")
    return GeminiProvider(settings, transport=transport)


# -- request: contents -------------------------------------------------------------------------
def test_system_prompt_goes_in_system_instruction_and_roles_are_user_and_model() -> None:
    got = body(user("Hi"), Message(role="assistant", content="Hello", provider="gemini"),
               user("Bye"), system="Be brief.")
    assert got == {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Hi"}]},
            {"role": "model", "parts": [{"text": "Hello"}]},
            {"role": "user", "parts": [{"text": "Bye"}]},
        ],
    }


def test_system_messages_in_the_history_join_the_system_instruction() -> None:
    got = body(Message(role="system", content="Rule two."), user("Hi"), system="Rule one.")
    assert got["systemInstruction"] == {"parts": [{"text": "Rule one.\n\nRule two."}]}
    assert got["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]


def test_consecutive_messages_of_one_role_are_merged_into_one_content() -> None:
    got = body(user("one"), user("two"), Message(role="assistant", content="a"),
               Message(role="assistant", content="b"))
    assert got["contents"] == [
        {"role": "user", "parts": [{"text": "one"}, {"text": "two"}]},
        {"role": "model", "parts": [{"text": "a"}, {"text": "b"}]},
    ]


def test_a_history_starting_with_the_model_gets_a_user_turn_first() -> None:
    got = body(Message(role="assistant", content="Earlier answer"), user("go on"))
    assert got["contents"] == [
        {"role": "user", "parts": [{"text": "Continue."}]},
        {"role": "model", "parts": [{"text": "Earlier answer"}]},
        {"role": "user", "parts": [{"text": "go on"}]},
    ]


def test_images_are_inline_data() -> None:
    got = body(Message(role="user", content=[TextBlock(text="see"),
                                             ImageBlock(media_type="image/png", data="AAAA")]))
    assert got["contents"] == [{"role": "user", "parts": [
        {"text": "see"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]}]


def _call(id_: str, name: str, args: dict[str, Any], sig: str | None = None) -> ToolUseBlock:
    return ToolUseBlock(id=id_, name=name, input=args, thought_signature=sig)


def _result(id_: str, name: str, text: str, *, error: bool = False) -> Message:
    return Message(role="tool", content=[ToolResultBlock(tool_use_id=id_, name=name,
                                                         content=text, is_error=error)])


def test_function_call_args_and_response_are_objects_and_strings_are_wrapped() -> None:
    minted = new_tool_call_id()
    got = body(user("weather?"),
               Message(role="assistant", provider="gemini",
                       content=[_call(minted, "get_weather", {"city": "Paris"})]),
               _result(minted, "get_weather", "sunny"))
    assert got["contents"] == [
        {"role": "user", "parts": [{"text": "weather?"}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}}]},
    ]


def test_a_failed_call_answers_with_an_error_object() -> None:
    minted = new_tool_call_id()
    got = body(user("x"), Message(role="assistant", provider="gemini",
                                  content=[_call(minted, "Bash", {"command": "ls"})]),
               _result(minted, "Bash", "permission denied", error=True))
    assert got["contents"][2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "Bash", "response": {"error": "permission denied"}}}]}


def test_the_id_gemini_issued_goes_back_on_the_call_and_its_response() -> None:
    got = body(user("x"), Message(role="assistant", provider="gemini",
                                  content=[_call("96c1su3s", "get_user_country", {})]),
               _result("96c1su3s", "get_user_country", "FR"))
    assert got["contents"][1:] == [
        {"role": "model", "parts": [
            {"functionCall": {"name": "get_user_country", "args": {}, "id": "96c1su3s"}}]},
        {"role": "user", "parts": [{"functionResponse": {
            "name": "get_user_country", "response": {"result": "FR"}, "id": "96c1su3s"}}]},
    ]


def test_a_result_without_a_name_takes_the_name_of_its_call() -> None:
    minted = new_tool_call_id()
    got = body(user("x"), Message(role="assistant", provider="gemini",
                                  content=[_call(minted, "Read", {"path": "a"})]),
               Message(role="tool", content=[ToolResultBlock(tool_use_id=minted, content="A")]))
    assert got["contents"][2]["parts"] == [
        {"functionResponse": {"name": "Read", "response": {"result": "A"}}}]


def test_parallel_calls_share_one_model_content_and_responses_one_user_content_in_call_order(
) -> None:
    ids = [new_tool_call_id() for _ in range(3)]
    got = body(
        user("read them"),
        Message(role="assistant", provider="gemini", content=[
            _call(ids[0], "read_file", {"path": "a.md"}, "SIG"),
            _call(ids[1], "read_file", {"path": "b.md"}),
            _call(ids[2], "read_file", {"path": "c.md"})]),
        _result(ids[2], "read_file", "C"), _result(ids[0], "read_file", "A"),
        _result(ids[1], "read_file", "B"),
    )
    assert got["contents"][1:] == [
        {"role": "model", "parts": [
            {"functionCall": {"name": "read_file", "args": {"path": "a.md"}},
             "thoughtSignature": "SIG"},
            {"functionCall": {"name": "read_file", "args": {"path": "b.md"}}},
            {"functionCall": {"name": "read_file", "args": {"path": "c.md"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "read_file", "response": {"result": "A"}}},
            {"functionResponse": {"name": "read_file", "response": {"result": "B"}}},
            {"functionResponse": {"name": "read_file", "response": {"result": "C"}}}]},
    ]


def test_a_call_without_a_recorded_result_gets_an_error_response() -> None:
    ids = [new_tool_call_id() for _ in range(2)]
    got = body(user("x"),
               Message(role="assistant", provider="gemini", status="cancelled",
                       content=[_call(ids[0], "A", {}), _call(ids[1], "B", {})]),
               _result(ids[0], "A", "done"), user("stop that"))
    assert got["contents"][2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "A", "response": {"result": "done"}}},
        {"functionResponse": {"name": "B",
                              "response": {"error": "No result was recorded for this call."}}},
        {"text": "stop that"},
    ]}


def test_a_result_with_no_call_before_it_is_sent_as_text() -> None:
    got = body(_result("toolu_gone", "Read", "old output"), user("continue"))
    assert got["contents"] == [{"role": "user", "parts": [
        {"text": "[result of Read]\nold output"}, {"text": "continue"}]}]


def test_images_of_a_tool_result_follow_the_function_responses() -> None:
    minted = new_tool_call_id()
    result = ToolResultBlock(tool_use_id=minted, name="shot", content=[
        TextBlock(text="captured"), ImageBlock(media_type="image/png", data="PNG")])
    got = body(user("x"), Message(role="assistant", provider="gemini",
                                  content=[_call(minted, "shot", {})]),
               Message(role="tool", content=[result]))
    assert got["contents"][2]["parts"] == [
        {"functionResponse": {"name": "shot", "response": {"result": "captured"}}},
        {"inlineData": {"mimeType": "image/png", "data": "PNG"}}]


# -- request: reasoning artefacts --------------------------------------------------------------
def test_gemini_thought_text_and_call_signatures_go_back_on_their_own_parts() -> None:
    minted = new_tool_call_id()
    reply = Message(role="assistant", provider="gemini", content=[
        ThinkingBlock(thinking="planning", thought_signature="S1"),
        TextBlock(text="Let me look.", thought_signature="S2"),
        TextBlock(text=" More text."),
        _call(minted, "ls", {"dir": "."}, "S3"),
        TextBlock(text="", thought_signature="S4"),
    ])
    got = body(user("x"), reply, _result(minted, "ls", "a b"))
    assert got["contents"][1] == {"role": "model", "parts": [
        {"text": "planning", "thought": True, "thoughtSignature": "S1"},
        {"text": "Let me look.", "thoughtSignature": "S2"},
        {"text": " More text."},
        {"functionCall": {"name": "ls", "args": {"dir": "."}}, "thoughtSignature": "S3"},
        {"text": "", "thoughtSignature": "S4"},
    ]}


def test_gemini_server_tool_parts_go_back_verbatim() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
    result = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}
    call = {"toolCall": {"id": "t1", "toolType": "GOOGLE_SEARCH_WEB", "args": {"q": "x"}},
            "thoughtSignature": "SIG"}
    reply = Message(role="assistant", provider="gemini", content=[
        ServerToolBlock(raw=code), ServerToolBlock(raw=result), ServerToolBlock(raw=call),
        TextBlock(text="1")])
    assert body(user("x"), reply)["contents"][1]["parts"] == [code, result, call, {"text": "1"}]


def test_artefacts_of_other_providers_are_dropped_cleanly() -> None:
    minted = "toolu_01ABC"
    anthropic_reply = Message(role="assistant", provider="anthropic", reasoning_content="hmm",
                              content=[
        ThinkingBlock(thinking="thinking...", signature="ANTHROPIC_SIG"),
        RedactedThinkingBlock(data="ENCRYPTED"),
        ServerToolBlock(raw={"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                             "input": {"query": "q"}}),
        TextBlock(text="Found it.", citations=[{"type": "web_search_result_location"}]),
        _call(minted, "Read", {"path": "a"}),
    ])
    got = body(user("x"), anthropic_reply, _result(minted, "Read", "A"))
    assert got["contents"][1:] == [
        {"role": "model", "parts": [
            {"text": "Found it."}, {"functionCall": {"name": "Read", "args": {"path": "a"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "Read", "response": {"result": "A"}}}]},
    ]


def test_openai_reasoning_content_is_dropped() -> None:
    reply = Message(role="assistant", provider="openai", reasoning_content="chain of thought",
                    content="Answer")
    assert body(user("x"), reply)["contents"][1] == {"role": "model", "parts": [{"text": "Answer"}]}


def test_on_gemini_3_an_unsigned_call_from_elsewhere_carries_the_skip_signature() -> None:
    ids = ["toolu_1", "toolu_2"]
    reply = Message(role="assistant", provider="anthropic",
                    content=[_call(ids[0], "A", {}), _call(ids[1], "B", {})])
    got = body(user("x"), reply, _result(ids[0], "A", "a"), _result(ids[1], "B", "b"),
               model="gemini-3-pro-preview")
    assert got["contents"][1]["parts"] == [
        {"functionCall": {"name": "A", "args": {}}, "thoughtSignature": SKIP_SIGNATURE},
        {"functionCall": {"name": "B", "args": {}}}]
    # 2.5 models do not validate signatures: nothing is added there
    plain = body(user("x"), reply, _result(ids[0], "A", "a"), _result(ids[1], "B", "b"))
    assert "thoughtSignature" not in plain["contents"][1]["parts"][0]


@pytest.mark.parametrize("fixture", ["function-call-with-id-signature",
                                     "vertex-streamed-function-call-args",
                                     "thinking-thought-parts"])
def test_signatures_of_a_recorded_stream_return_on_their_original_parts(fixture: str) -> None:
    raw = (FIXTURES / "gemini" / f"{fixture}.sse").read_bytes()
    expected = json.loads((FIXTURES / "gemini" / f"{fixture}.expected.json").read_text())
    reply = message_from(raw)
    results = [_result(c.id, c.name, "ok") for c in reply.tool_calls()]
    sent = body(user("go"), reply, *results, model=expected["model"])["contents"][1]["parts"]
    wire = [p for chunk in _chunks(raw) for c in chunk.get("candidates", [])
            for p in c.get("content", {}).get("parts", [])]
    signed_wire = [p for p in wire if "thoughtSignature" in p]
    signed_sent = [p for p in sent if "thoughtSignature" in p]
    assert [p["thoughtSignature"] for p in signed_sent] == expected["thought_signatures"]
    for got, original in zip(signed_sent, signed_wire, strict=True):
        if "functionCall" in original:  # the signed call is the same call
            assert got["functionCall"]["name"] == original["functionCall"]["name"]
            assert got["functionCall"].get("id") == original["functionCall"].get("id")
        else:  # the signed text part starts with the text of the part that carried it
            assert got["text"].startswith(original["text"])
            assert got.get("thought") == original.get("thought")


def _chunks(raw: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    return [json.loads(e.data) for e in [*decoder.feed(raw), *decoder.close()]]


def test_thought_parts_from_the_recording_are_sent_back_as_thought_parts() -> None:
    expected = json.loads((FIXTURES / "gemini" / "thinking-thought-parts.expected.json")
                          .read_text())
    reply = message_from((FIXTURES / "gemini" / "thinking-thought-parts.sse").read_bytes())
    parts = body(user("how?"), reply, model="gemini-2.5-pro")["contents"][1]["parts"]
    # the four thought chunks form one thought part; the signed first answer chunk is its own
    # part (the signature came on it), the rest of the answer follows
    assert parts[0] == {"text": expected["reasoning"], "thought": True}
    assert parts[1]["thoughtSignature"] == expected["thought_signatures"][0]
    assert parts[1]["text"].startswith("This is a great question!")
    assert parts[1]["text"] + parts[2]["text"] == expected["text"]
    assert len(parts) == 3


# -- request: generation config and tools ------------------------------------------------------
def test_generation_config_carries_max_output_tokens_and_temperature() -> None:
    got = body(user("x"), max_tokens=1000, temperature=0.2)
    assert got["generationConfig"] == {"maxOutputTokens": 1000, "temperature": 0.2}


def test_tools_are_function_declarations_with_converted_schemas() -> None:
    tool = ToolDefinition(name="Edit", description="Edit a file", parameters={
        "type": "object", "additionalProperties": False, "$schema": "x",
        "properties": {"path": {"type": "string", "format": "uri"},
                       "mode": {"type": ["string", "null"], "enum": ["a", "b", None]}},
        "required": ["path"]})
    got = body(user("x"), tools=[tool, ToolDefinition(name="Now")])
    assert got["tools"] == [{"functionDeclarations": [
        {"name": "Edit", "description": "Edit a file", "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"},
                           "mode": {"type": "string", "nullable": True, "enum": ["a", "b"]}},
            "required": ["path"]}},
        {"name": "Now", "parameters": {"type": "object"}},
    ]}]
    assert "toolConfig" not in got


def test_google_search_with_function_tools_asks_for_server_side_tool_invocations() -> None:
    got = body(user("x"), tools=[ToolDefinition(name="Now")], server_tools=["web_search"],
               model="gemini-3-flash-preview")
    assert got["tools"] == [{"functionDeclarations": [{"name": "Now",
                                                       "parameters": {"type": "object"}}]},
                            {"google_search": {}}]
    assert got["toolConfig"] == {"includeServerSideToolInvocations": True}


def test_built_in_tools_alone_need_no_tool_config() -> None:
    got = body(user("x"), server_tools=["web_search", "url_context", "code_execution",
                                        "unknown_tool"])
    assert got["tools"] == [{"google_search": {}}, {"url_context": {}}, {"code_execution": {}}]
    assert "toolConfig" not in got


def test_url_context_can_come_from_reasoning_params() -> None:
    got = body(user("x"), reasoning=ReasoningParams(url_context=True),
               server_tools=["url_context"])
    assert got["tools"] == [{"url_context": {}}]


# -- thinking ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("model", "budget", "max_tokens", "sent"), [
    ("gemini-2.5-flash", 100_000, None, 24576),
    ("gemini-2.5-flash-lite", 30_000, None, 24576),
    ("gemini-2.5-pro", 100_000, None, 32768),  # Google documents 128-32768 for 2.5 Pro
    ("gemini-2.5-pro", 30_000, None, 30_000),
    ("gemini-3-pro-preview", 100_000, None, 65536),
    ("gemini-3-pro-preview", 50_000, None, 50_000),
    ("gemini-2.5-pro", 20_000, 8000, 4000),
    ("gemini-2.5-flash", 20_000, 100_000, 20_000),
    ("gemini-2.5-flash", 1024, 8000, 1024),
])
def test_thinking_budget_is_capped(model: str, budget: int, max_tokens: int | None,
                                   sent: int) -> None:
    got = body(user("x"), model=model, max_tokens=max_tokens,
               reasoning=ReasoningParams(thinking_type="enabled", thinking_budget=budget))
    assert got["generationConfig"]["thinkingConfig"] == {"thinkingBudget": sent,
                                                         "includeThoughts": True}


@pytest.mark.parametrize(("model", "config"), [
    ("gemini-2.5-flash", {"thinkingBudget": 0}),
    ("gemini-2.5-flash-lite", {"thinkingBudget": 0}),
    ("gemini-2.5-pro", {"thinkingBudget": 128}),  # 2.5 Pro cannot turn thinking off
    ("gemini-3-flash-preview", {"thinkingLevel": "minimal"}),
    ("gemini-3-pro-preview", {"thinkingLevel": "low"}),  # no "minimal" on Pro
])
def test_disabled_thinking_is_off_where_allowed_and_least_elsewhere(
        model: str, config: dict[str, Any]) -> None:
    assert thinking_config(model, ReasoningParams(thinking_type="disabled"), None) == config
    assert thinking_config(model, ReasoningParams(thinking_budget=0), None) == config


def test_gemini_3_takes_a_thinking_level_never_with_a_budget() -> None:
    params = ReasoningParams(thinking_level="high", thinking_budget=5000)
    assert thinking_config("gemini-3-pro-preview", params, None) == {
        "thinkingLevel": "high", "includeThoughts": True}
    assert thinking_config("gemini-3-flash-preview", ReasoningParams(effort="medium"), None) == {
        "thinkingLevel": "medium", "includeThoughts": True}
    assert thinking_config("gemini-3.1-pro-preview", ReasoningParams(thinking_level="minimal"),
                           None) == {"thinkingLevel": "low", "includeThoughts": True}


def test_enabled_thinking_without_a_budget_is_dynamic_on_2_5_and_thoughts_can_be_hidden() -> None:
    assert thinking_config("gemini-2.5-pro", ReasoningParams(thinking_type="enabled"), None) == {
        "thinkingBudget": -1, "includeThoughts": True}
    hidden = ReasoningParams(thinking_type="enabled", thinking_budget=2048, include_thoughts=False)
    assert thinking_config("gemini-2.5-flash", hidden, None) == {
        "thinkingBudget": 2048, "includeThoughts": False}


def test_no_reasoning_params_means_no_thinking_config() -> None:
    assert thinking_config("gemini-2.5-pro", None, 1000) is None
    assert thinking_config("gemini-2.5-pro", ReasoningParams(), 1000) is None
    unrelated = ReasoningParams(text_verbosity="low", enabled_search=True)
    assert "generationConfig" not in body(user("x"), reasoning=unrelated)


# -- stream translation ------------------------------------------------------------------------
def test_text_and_thought_parts_and_signatures_in_order() -> None:
    events = translate(
        {"responseId": "r1", "modelVersion": "gemini-2.5-pro",
         **candidate({"text": "plan", "thought": True}, {"text": "", "thought": True,
                                                         "thoughtSignature": "T"})},
        candidate({"text": "Answer", "thoughtSignature": "S"}, {"text": " more"}, finish="STOP"),
    )
    assert events == [
        MessageStart(id="r1", model="gemini-2.5-pro"),
        ReasoningDelta("plan"), ReasoningDelta(""), ThoughtSignature("T"),
        ContentDelta("Answer"), ThoughtSignature("S"), ContentDelta(" more"),
        MessageEnd(usage=Usage(), stop_reason="STOP"),
    ]


def test_a_call_with_arguments_is_ready_at_once() -> None:
    translator = GeminiTranslator()
    first = translator.feed(SSEEvent(data=json.dumps(candidate(
        {"functionCall": {"name": "get", "args": {"q": 1}}, "thoughtSignature": "SIG"}))))
    assert first[1] == ToolCallStart(index=0, id=None, name="get")
    ready = first[2]
    assert isinstance(ready, ToolCallReady)
    assert (ready.call.name, ready.call.arguments, ready.call.provider_id,
            ready.call.thought_signature) == ("get", {"q": 1}, None, "SIG")
    assert ready.call.id.startswith("call_")
    end = translator.feed(SSEEvent(data=json.dumps(candidate(finish="STOP")))) + translator.finish()
    assert end == [ToolCallsRequested([ready.call]), MessageEnd(Usage(), "STOP")]


def test_a_call_with_empty_args_waits_for_the_next_part() -> None:
    translator = GeminiTranslator()
    first = translator.feed(SSEEvent(data=json.dumps(candidate(
        {"functionCall": {"name": "now", "args": {}, "id": "abc"}}))))
    assert [type(e) for e in first] == [MessageStart, ToolCallStart]
    second = translator.feed(SSEEvent(data=json.dumps(candidate({"text": ""}, finish="STOP"))))
    assert len(second) == 1 and isinstance(second[0], ToolCallReady)
    assert (second[0].call.id, second[0].call.provider_id) == ("abc", "abc")


def test_server_tool_parts_are_surfaced_whole() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(2+2)"}}
    out = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}}
    call = {"toolCall": {"toolType": "GOOGLE_SEARCH_WEB", "args": {}}, "thoughtSignature": "X"}
    events = translate(candidate(code, out, call, {"text": "4"}, finish="STOP"))
    assert events[1:5] == [ServerToolBlockEvent(code), ServerToolBlockEvent(out),
                           ServerToolBlockEvent(call), ContentDelta("4")]


def test_grounding_metadata_last_non_empty_wins_and_usage_last_wins() -> None:
    events = translate(
        {**candidate({"text": "a"}, groundingMetadata={}),
         "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3}},
        {**candidate({"text": "b"}, groundingMetadata={"webSearchQueries": ["q"]}, finish="STOP"),
         "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2,
                           "thoughtsTokenCount": 5, "cachedContentTokenCount": 1,
                           "toolUsePromptTokenCount": 7, "totalTokenCount": 17}},
    )
    assert GroundingMetadata({"webSearchQueries": ["q"]}) in events
    assert sum(isinstance(e, GroundingMetadata) for e in events) == 1
    assert events[-1] == MessageEnd(Usage(input_tokens=3, output_tokens=2, reasoning_tokens=5,
                                          cached_input_tokens=1, tool_use_prompt_tokens=7,
                                          total_tokens=17), "STOP")


def test_unknown_parts_and_fields_do_not_break_the_stream() -> None:
    events = translate(candidate({"inlineData": {"mimeType": "image/png", "data": "x"}},
                                 {"text": "ok", "futureField": 1}, finish="STOP",
                                 safetyRatings=[], avgLogprobs=-0.1))
    assert events[1:] == [ContentDelta("ok"), MessageEnd(Usage(), "STOP")]


def test_keep_alive_events_are_ignored_and_garbage_is_an_error() -> None:
    translator = GeminiTranslator()
    assert translator.feed(SSEEvent(data="")) == []
    with pytest.raises(ProviderError) as info:
        translator.feed(SSEEvent(data="<html>Bad Gateway</html>"))
    assert info.value.kind is ErrorKind.SERVER
    with pytest.raises(ProviderError) as info:
        GeminiTranslator().feed(SSEEvent(data='{"candidates": [{"content": '))
    assert info.value.kind is ErrorKind.STREAM_INTERRUPTED


def test_eof_without_finish_reason_is_stream_interrupted() -> None:
    translator = GeminiTranslator()
    translator.feed(SSEEvent(data=json.dumps(candidate({"text": "partial"}))))
    with pytest.raises(ProviderError) as info:
        translator.finish()
    assert info.value.kind is ErrorKind.STREAM_INTERRUPTED and info.value.retryable


def test_malformed_function_call_is_a_retryable_server_error() -> None:
    translator = GeminiTranslator()
    with pytest.raises(ProviderError) as info:
        translator.feed(SSEEvent(data=json.dumps({"candidates": [{
            "finishReason": "MALFORMED_FUNCTION_CALL",
            "finishMessage": "Malformed function call: print(default_api.x("}]})))
    assert info.value.kind is ErrorKind.SERVER and info.value.retryable
    assert "MALFORMED_FUNCTION_CALL" in info.value.message and info.value.in_stream


# -- HTTP --------------------------------------------------------------------------------------
async def test_stream_chat_posts_to_the_versioned_url_with_the_key_header() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=(FIXTURES / "gemini" / "text-basic.sse").read_bytes(),
                               headers={"content-type": "text/event-stream"})

    async with provider(httpx2.MockTransport(handler), base_url=BASE + "/") as gemini:
        request = ChatRequest(model="gemini-2.0-flash-exp", messages=[user("capital?")],
                              max_tokens=100)
        events = [e async for e in gemini.stream_chat(request)]
    assert str(seen[0].url) == (f"{BASE}/v1beta/models/gemini-2.0-flash-exp"
                                ":streamGenerateContent?alt=sse")
    assert seen[0].headers["x-goog-api-key"] == "KEY"
    assert "key=" not in str(seen[0].url)  # the key never sits in a URL that gets logged
    assert json.loads(seen[0].content) == body(user("capital?"), model="gemini-2.0-flash-exp",
                                               max_tokens=100)
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == (
        "The capital of France is Paris.\n")
    assert events[-1] == MessageEnd(Usage(input_tokens=13, output_tokens=8, reasoning_tokens=0,
                                          cached_input_tokens=0, tool_use_prompt_tokens=0,
                                          total_tokens=21), "STOP")


@pytest.mark.parametrize("base", [BASE, BASE + "/v1beta", BASE + "/v1/",
                                  "http://proxy:8080/gemini"])
async def test_the_base_url_has_no_version_and_the_adapter_adds_v1beta(base: str) -> None:
    async with provider(httpx2.MockTransport(lambda r: httpx2.Response(500)), base) as gemini:
        call = gemini.build_call(ChatRequest(model="models/gemini-2.5-pro", messages=[user("x")]))
    root = base.rstrip("/").removesuffix("/v1").removesuffix("/v1beta")
    assert call.url == f"{root}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"


async def test_429_with_retry_info_is_rate_limited_with_retry_after() -> None:
    error_body = {"error": {"code": 429, "message": "Resource has been exhausted.",
                            "status": "RESOURCE_EXHAUSTED", "details": [
                                {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
                                {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                 "retryDelay": "37s"}]}}
    transport = httpx2.MockTransport(lambda r: httpx2.Response(429, json=error_body))
    async with provider(transport) as gemini:
        with pytest.raises(ProviderError) as info:
            [e async for e in gemini.stream_chat(ChatRequest(model="gemini-2.5-flash",
                                                             messages=[user("x")]))]
    assert info.value.kind is ErrorKind.RATE_LIMITED
    assert info.value.retry_after_s == 37.0 and info.value.status == 429


async def test_a_bad_api_key_is_auth_although_gemini_answers_400() -> None:
    error_body = {"error": {"code": 400,
                            "message": "API key not valid. Please pass a valid API key.",
                            "status": "INVALID_ARGUMENT", "details": [
                                {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                 "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}
    transport = httpx2.MockTransport(lambda r: httpx2.Response(400, json=error_body))
    async with provider(transport) as gemini:
        with pytest.raises(ProviderError) as info:
            [e async for e in gemini.stream_chat(ChatRequest(model="gemini-2.5-flash",
                                                             messages=[user("x")]))]
    assert info.value.kind is ErrorKind.AUTH


async def test_an_error_inside_the_200_stream_is_classified() -> None:
    raw = sse(candidate({"text": "Hel"}),
              {"error": {"code": 503, "message": "The model is overloaded.",
                         "status": "UNAVAILABLE"}})
    transport = httpx2.MockTransport(lambda r: httpx2.Response(200, content=raw))
    events: list[Any] = []
    async with provider(transport) as gemini:
        with pytest.raises(ProviderError) as info:
            async for event in gemini.stream_chat(ChatRequest(model="gemini-2.5-flash",
                                                              messages=[user("x")])):
                events.append(event)
    assert info.value.kind is ErrorKind.OVERLOADED and info.value.in_stream
    assert events[-1] == ContentDelta("Hel")


async def test_models_are_listed_page_by_page_with_the_key_header() -> None:
    pages = {
        None: {"models": [
            {"name": "models/gemini-2.5-pro", "displayName": "Gemini 2.5 Pro",
             "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
             "supportedGenerationMethods": ["generateContent", "countTokens"]},
            {"name": "models/text-embedding-004",
             "supportedGenerationMethods": ["embedContent"]}],
            "nextPageToken": "P2"},
        "P2": {"models": [{"name": "models/gemini-2.5-flash", "inputTokenLimit": 1048576,
                           "outputTokenLimit": 65536,
                           "supportedGenerationMethods": ["generateContent"]}]},
    }
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        assert request.url.path == "/v1beta/models"
        return httpx2.Response(200, json=pages[request.url.params.get("pageToken")])

    async with provider(httpx2.MockTransport(handler)) as gemini:
        models = await gemini.list_models()
    assert models == [ModelInfo("gemini-2.5-pro", "Gemini 2.5 Pro", 1048576, 65536),
                      ModelInfo("gemini-2.5-flash", None, 1048576, 65536)]
    assert [r.headers["x-goog-api-key"] for r in seen] == ["KEY", "KEY"]


async def test_the_default_models_are_used_when_listing_fails() -> None:
    transport = httpx2.MockTransport(lambda r: httpx2.Response(403, json={"error": {
        "code": 403, "message": "denied", "status": "PERMISSION_DENIED"}}))
    async with provider(transport) as gemini:
        models = await gemini.list_models()
    assert models == list(GeminiProvider.DEFAULT_MODELS)
    assert all(m.context_window and m.max_output_tokens for m in models)
    assert any(m.id == "gemini-2.5-pro" for m in models)


def test_replay_lists_signatures_of_server_tool_parts_in_stream_order() -> None:
    raw = sse(candidate({"toolCall": {"toolType": "GOOGLE_SEARCH_WEB", "args": {}},
                         "thoughtSignature": "A"},
                        {"toolResponse": {"toolType": "GOOGLE_SEARCH_WEB", "response": {}}},
                        {"functionCall": {"name": "f", "args": {"x": 1}},
                         "thoughtSignature": "B"},
                        {"text": "done", "thoughtSignature": "C"}, finish="STOP"))
    assert replay("gemini", [raw])["thought_signatures"] == ["A", "B", "C"]


async def test_a_server_that_keeps_the_stream_open_after_finish_cannot_hang_the_turn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "DRAIN_GRACE_S", 0.05)

    class Hanging(httpx2.AsyncByteStream):
        async def __aiter__(self):
            yield sse(candidate({"text": "Hi"}))
            yield sse({**candidate(finish="STOP"), "usageMetadata": {"promptTokenCount": 1,
                                                                      "totalTokenCount": 2}})
            await asyncio.sleep(3600)  # the connection stays open
            yield b""

    transport = httpx2.MockTransport(lambda r: httpx2.Response(200, stream=Hanging()))
    async with provider(transport) as gemini:
        async with asyncio.timeout(5):
            events = [e async for e in gemini.stream_chat(ChatRequest(
                model="gemini-2.5-flash", messages=[user("x")]))]
    assert events[-1].stop_reason == "STOP" and events[-1].usage.total_tokens == 2
