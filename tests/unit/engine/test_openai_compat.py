"""OpenAI-compatible request mapping: one golden body per rule (exact dict equality), quirk
profiles, reasoning parameters per profile, and the adapter over HTTP (httpx2.MockTransport)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ContentDelta, MessageEnd, MessageStart
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
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.base import ModelInfo, ProviderSettings
from apps.engine.providers.openai_compat import OpenAICompatProvider, build_body
from apps.engine.providers.profiles import PROFILES, profile_for
from apps.engine.replay import replay_events
from tests.conftest import FIXTURES

GENERIC = PROFILES["generic"]
STREAM = {"stream": True, "stream_options": {"include_usage": True}}


def body_for(messages: list[Message], profile: str = "generic", model: str = "m",
             **kwargs: Any) -> dict[str, Any]:
    request = ChatRequest(model=model, messages=messages, **kwargs)
    return build_body(request, PROFILES[profile])


def golden(messages: list[dict[str, Any]], model: str = "m", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": messages, **STREAM, **extra}


def user(text: str) -> Message:
    return Message(role="user", content=text)


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> ToolUseBlock:
    return ToolUseBlock(id=call_id, name=name, input=arguments)


def results(*pairs: tuple[str, str]) -> Message:
    return Message(role="tool", content=[ToolResultBlock(tool_use_id=i, content=c)
                                         for i, c in pairs])


def wire_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


# -- request rules ----------------------------------------------------------------------------


def test_plain_request_streams_with_usage_and_string_content() -> None:
    assert body_for([user("hi")]) == golden([{"role": "user", "content": "hi"}])


def test_system_prompt_goes_first_with_the_profile_role() -> None:
    assert body_for([user("hi")], system="Be brief.") == golden(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    assert body_for([user("hi")], profile="openai", system="Be brief.") == golden(
        [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}])


def test_stream_options_only_where_the_profile_accepts_them() -> None:
    assert body_for([user("hi")], profile="mistral") == {
        "model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_tools_in_function_form_and_the_token_cap_field_per_profile() -> None:
    tool = ToolDefinition(name="Read", description="Read a file",
                          parameters={"type": "object", "properties": {"path": {}}})
    wire_tool = {"type": "function", "function": {
        "name": "Read", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {}}}}}
    assert body_for([user("hi")], tools=[tool], max_tokens=100, temperature=0.2) == golden(
        [{"role": "user", "content": "hi"}], tools=[wire_tool], max_tokens=100,
        temperature=0.2)
    assert body_for([user("hi")], profile="openai", model="gpt-4o", max_tokens=100) == golden(
        [{"role": "user", "content": "hi"}], model="gpt-4o", max_completion_tokens=100)


def test_tool_history_round_trips_as_tool_calls_and_one_tool_message_per_result() -> None:
    history = [
        user("weather?"),
        Message(role="assistant", provider="openai", content=[
            TextBlock(text="Checking."), tool_use("c1", "get_weather", {"city": "Paris"}),
            tool_use("c2", "get_time", {})]),
        results(("c1", '{"temp_c": 18}'), ("c2", "12:00")),
    ]
    assert body_for(history) == golden([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            wire_call("c1", "get_weather", '{"city": "Paris"}'),
            wire_call("c2", "get_time", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp_c": 18}'},
        {"role": "tool", "tool_call_id": "c2", "content": "12:00"},
    ])


def test_assistant_that_only_calls_tools_has_null_content_or_the_profile_placeholder() -> None:
    history = [user("go"), Message(role="assistant", content=[tool_use("c1", "f", {})]),
               results(("c1", "ok"))]
    def answered(content: str | None) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "go"},
                {"role": "assistant", "content": content,
                 "tool_calls": [wire_call("c1", "f", "{}")]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}]

    assert body_for(history) == golden(answered(None))
    assert body_for(history, profile="deepseek", model="deepseek-chat") == golden(
        answered(""), model="deepseek-chat")


def test_every_call_gets_a_result_and_orphan_results_are_dropped() -> None:
    history = [user("go"), Message(role="assistant", content=[tool_use("c1", "f", {}),
                                                              tool_use("c2", "g", {})]),
               results(("c2", "done"), ("zz", "orphan")), user("and now?")]
    assert body_for(history) == golden([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None,
         "tool_calls": [wire_call("c1", "f", "{}"), wire_call("c2", "g", "{}")]},
        {"role": "tool", "tool_call_id": "c2", "content": "done"},
        {"role": "tool", "tool_call_id": "c1",
         "content": "(no result: the tool call did not complete)"},
        {"role": "user", "content": "and now?"},
    ])


def test_images_are_sent_as_data_urls_with_the_text_parts_in_order() -> None:
    message = Message(role="user", content=[TextBlock(text="What is this?"),
                                            ImageBlock(media_type="image/png", data="iVBO")])
    assert body_for([message]) == golden([{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]}])


def test_images_are_named_not_sent_to_a_profile_without_image_input() -> None:
    message = Message(role="user", content=[TextBlock(text="What is this?"),
                                            ImageBlock(media_type="image/png", data="iVBO")])
    assert body_for([message], profile="deepseek", model="deepseek-chat") == golden(
        [{"role": "user",
          "content": "What is this?\n\n[image omitted: this model does not accept images]"}],
        model="deepseek-chat")


def test_mistral_gets_nine_character_tool_call_ids_that_still_match() -> None:
    history = [user("go"), Message(role="assistant", content=[tool_use("toolu_01XYZ", "f", {}),
                                                              tool_use("abcDEF123", "g", {})]),
               results(("toolu_01XYZ", "a"), ("abcDEF123", "b"))]
    wire = body_for(history, profile="mistral")["messages"]
    mapped = wire[1]["tool_calls"][0]["id"]
    assert len(mapped) == 9 and mapped.isalnum()
    assert [m["tool_call_id"] for m in wire[2:]] == [mapped, "abcDEF123"]


def test_other_providers_artefacts_are_dropped_cleanly() -> None:
    anthropic_turn = Message(role="assistant", provider="anthropic", content=[
        ThinkingBlock(thinking="let me think", signature="SIG"),
        RedactedThinkingBlock(data="opaque"),
        ServerToolBlock(raw={"type": "server_tool_use", "id": "srv", "name": "web_search"}),
        TextBlock(text="Found it.", citations=[{"type": "web_search_result_location"}]),
        tool_use("toolu_1", "Read", {"path": "a"}),
    ])
    gemini_turn = Message(role="assistant", provider="gemini", content=[
        TextBlock(text="Sure.", thought_signature="GSIG"),
        ToolUseBlock(id="g1", name="Read", input={}, thought_signature="GSIG2")])
    history = [user("q"), anthropic_turn, results(("toolu_1", "x")), gemini_turn,
               results(("g1", "y"))]
    assert body_for(history) == golden([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "Found it.",
         "tool_calls": [wire_call("toolu_1", "Read", '{"path": "a"}')]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "x"},
        {"role": "assistant", "content": "Sure.", "tool_calls": [wire_call("g1", "Read", "{}")]},
        {"role": "tool", "tool_call_id": "g1", "content": "y"},
    ])


def test_reasoning_content_is_not_sent_to_profiles_that_do_not_take_it() -> None:
    turn = Message(role="assistant", provider="openai", reasoning_content="hmm", content="4")
    for profile in ("openai", "xai", "generic", "openrouter"):
        assert body_for([user("2+2"), turn], profile=profile)["messages"][1] == {
            "role": "assistant", "content": "4"}


def test_deepseek_thinking_puts_reasoning_content_on_every_assistant_message() -> None:
    own = Message(role="assistant", provider="openai", reasoning_content="plan",
                  content=[tool_use("c1", "f", {})])
    plain = Message(role="assistant", provider="openai", content="done")
    foreign = Message(role="assistant", provider="anthropic",
                      content=[ThinkingBlock(thinking="secret", signature="S"),
                               TextBlock(text="hi")])
    history = [user("a"), own, results(("c1", "r")), plain, user("b"), foreign, user("c")]
    wire = body_for(history, profile="deepseek", model="deepseek-v4-flash")["messages"]
    assert [m.get("reasoning_content") for m in wire if m["role"] == "assistant"] == [
        "plan", "", ""]


def test_deepseek_without_thinking_sends_no_reasoning_content() -> None:
    turn = Message(role="assistant", provider="openai", reasoning_content="plan", content="x")
    for model, params in (("deepseek-chat", None),
                          ("deepseek-v4-flash", ReasoningParams(thinking_type="disabled"))):
        wire = body_for([user("a"), turn], profile="deepseek", model=model, reasoning=params)
        assert wire["messages"][1] == {"role": "assistant", "content": "x"}


def test_empty_assistant_messages_are_left_out() -> None:
    stopped = Message(role="assistant", provider="openai", reasoning_content="half a thought",
                      status="cancelled")
    assert body_for([user("a"), stopped, user("b")]) == golden(
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])


def test_deepseek_stream_round_trips_its_reasoning_into_the_next_request() -> None:
    body = (FIXTURES / "openai-compatible/deepseek-reasoner-tool-call.sse").read_bytes()
    events, error = replay_events("openai", [body])
    assert error is None
    assembler = MessageAssembler("openai")
    for event in events:
        assembler.feed(event)
    turn = assembler.message()
    call = turn.tool_calls()[0]
    history = [user("weather in SF?"), turn, results((call.id, "sunny"))]
    expected = json.loads((FIXTURES / "openai-compatible/deepseek-reasoner-tool-call"
                           ".expected.json").read_text())
    assert body_for(history, profile="deepseek", model="deepseek-reasoner") == golden([
        {"role": "user", "content": "weather in SF?"},
        {"role": "assistant", "content": "", "reasoning_content": expected["reasoning"],
         "tool_calls": [wire_call("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather",
                                  '{"location": "San Francisco"}')]},
        {"role": "tool", "tool_call_id": "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "content": "sunny"},
    ], model="deepseek-reasoner")


# -- reasoning parameters per profile ---------------------------------------------------------




@pytest.mark.parametrize(("profile", "model", "params", "expected"), [
    ("openai", "o4-mini", {"effort": "high"}, {"reasoning_effort": "high"}),
    ("openai", "gpt-5", {"effort": "max", "text_verbosity": "low"},
     {"reasoning_effort": "xhigh", "verbosity": "low"}),
    ("openai", "gpt-4o", {"effort": "high", "text_verbosity": "low"}, {}),
    ("xai", "grok-3-mini", {"effort": "xhigh"}, {"reasoning_effort": "high"}),
    ("xai", "grok-4", {"effort": "high"}, {}),
    ("groq", "openai/gpt-oss-120b", {"effort": "medium"}, {"reasoning_effort": "medium"}),
    ("groq", "openai/gpt-oss-120b", {"effort": "none"}, {}),
    ("groq", "llama-3.3-70b-versatile", {"effort": "high"}, {}),
    ("deepseek", "deepseek-v4-flash", {"effort": "high"},
     {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
    ("deepseek", "deepseek-v4-flash", {"thinking_type": "enabled"},
     {"thinking": {"type": "enabled"}}),
    ("deepseek", "deepseek-v4-flash", {"thinking_type": "disabled", "effort": "high"},
     {"thinking": {"type": "disabled"}}),
    ("deepseek", "deepseek-v4-flash", {"effort": "none"}, {"thinking": {"type": "disabled"}}),
    ("deepseek", "deepseek-reasoner", {"thinking_type": "disabled"}, {}),
    ("deepseek", "deepseek-reasoner", {"effort": "max"}, {"reasoning_effort": "max"}),
    ("qwen", "qwen3-max", {"thinking_type": "enabled", "thinking_budget": 4000},
     {"enable_thinking": True, "thinking_budget": 4000}),
    ("qwen", "qwen3-max", {"thinking_type": "disabled", "thinking_budget": 4000},
     {"enable_thinking": False}),
    ("qwen", "qwen-plus", {"enabled_search": True}, {"enable_search": True}),
    ("openrouter", "anthropic/claude-sonnet-4.5", {"effort": "low"},
     {"reasoning": {"effort": "low"}}),
    ("openrouter", "anthropic/claude-sonnet-4.5", {"thinking_budget": 2000},
     {"reasoning": {"max_tokens": 2000}}),
    ("openrouter", "anthropic/claude-sonnet-4.5", {"thinking_type": "disabled"},
     {"reasoning": {"effort": "none"}}),
    ("openrouter", "x-ai/grok-4", {"enabled_search": True}, {"plugins": [{"id": "web"}]}),
    ("mistral", "magistral-medium-latest", {"effort": "high", "enabled_search": True}, {}),
    ("llamacpp", "qwen3", {"effort": "high"}, {}),
    ("vllm", "openai/gpt-oss-20b", {"effort": "low"}, {"reasoning_effort": "low"}),
    ("generic", "any", {"thinking_level": "high", "url_context": True}, {}),
])
def test_reasoning_params_map_to_each_profiles_fields(
    profile: str, model: str, params: dict[str, Any], expected: dict[str, Any]
) -> None:
    body = body_for([user("hi")], profile=profile, model=model,
                    reasoning=ReasoningParams(**params))
    framing = STREAM if PROFILES[profile].stream_usage else {"stream": True}
    assert body == {"model": model, "messages": [{"role": "user", "content": "hi"}],
                    **framing, **expected}


def test_reasoning_models_get_no_temperature_on_openai() -> None:
    assert "temperature" not in body_for([user("hi")], profile="openai", model="o3",
                                         temperature=0.5)
    assert body_for([user("hi")], profile="openai", model="gpt-4.1",
                    temperature=0.5)["temperature"] == 0.5


def test_web_search_server_tool_turns_on_qwen_search() -> None:
    assert body_for([user("news?")], profile="qwen", model="qwen-plus",
                    server_tools=["web_search"])["enable_search"] is True


# -- profiles ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("base_url", "name"), [
    ("https://api.openai.com/v1", "openai"),
    ("https://api.deepseek.com/v1", "deepseek"),
    ("https://API.DeepSeek.com", "deepseek"),
    ("https://api.x.ai/v1", "xai"),
    ("https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen"),
    ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "qwen"),
    ("https://openrouter.ai/api/v1", "openrouter"),
    ("https://api.groq.com/openai/v1", "groq"),
    ("https://api.mistral.ai/v1", "mistral"),
    ("http://localhost:11434/v1", "ollama"),
    ("http://gpu-box.lan:11434/v1", "ollama"),
    ("http://localhost:8000/v1", "generic"),
    ("https://my-resource.openai.azure.com/openai/v1", "generic"),
    ("https://evil.example/api.openai.com/v1", "generic"),
])
def test_profile_defaults_from_the_base_url_host(base_url: str, name: str) -> None:
    assert profile_for(None, base_url).name == name


def test_a_named_profile_wins_over_the_host_and_unknown_names_fail() -> None:
    assert profile_for("vllm", "https://api.openai.com/v1").name == "vllm"
    with pytest.raises(ValueError, match="unknown OpenAI-compatible profile"):
        profile_for("nope", "https://api.openai.com/v1")


def test_every_design_profile_exists() -> None:
    assert set(PROFILES) == {"openai", "deepseek", "xai", "qwen", "openrouter", "groq",
                             "mistral", "ollama", "vllm", "llamacpp", "generic"}


# -- over HTTP --------------------------------------------------------------------------------


def provider(handler: Any, base_url: str = "https://api.deepseek.com/v1",
             **settings: Any) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        ProviderSettings(protocol="openai", base_url=base_url, api_key="sk-test", **settings),
        transport=httpx2.MockTransport(handler))


async def collect(p: OpenAICompatProvider, request: ChatRequest) -> list[Any]:
    async with p:
        return [event async for event in p.stream_chat(request)]


async def test_streams_a_recording_with_url_headers_and_body() -> None:
    seen: list[httpx2.Request] = []
    body = (FIXTURES / "openai-compatible/deepseek-reasoner-text.sse").read_bytes()

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=body,
                               headers={"content-type": "text/event-stream"})

    p = provider(handler, headers=(("X-Title", "confab"),))
    events = await collect(p, ChatRequest(model="deepseek-reasoner", messages=[user("r?")]))
    request = seen[0]
    assert str(request.url) == "https://api.deepseek.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["x-title"] == "confab"
    assert json.loads(request.content) == golden([{"role": "user", "content": "r?"}],
                                                 model="deepseek-reasoner")
    assert events[0] == MessageStart(id="cac7192e-e619-40c6-96b0-ed4276bc03ac",
                                     model="deepseek-reasoner")
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == \
        'The word "strawberry" contains three "r"s.'
    end = events[-1]
    assert isinstance(end, MessageEnd) and end.stop_reason == "stop"
    assert end.usage == Usage(input_tokens=18, output_tokens=219, total_tokens=237,
                              cached_input_tokens=0, reasoning_tokens=205)
    assert end.reasoning_ms is not None


async def test_http_429_is_rate_limited_with_retry_after() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(429, headers={"retry-after": "7"}, json={"error": {
            "message": "Rate limit reached", "type": "requests",
            "code": "rate_limit_exceeded"}})

    with pytest.raises(ProviderError) as caught:
        await collect(provider(handler), ChatRequest(model="m", messages=[user("x")]))
    assert (caught.value.kind, caught.value.retry_after_s, caught.value.status) == (
        ErrorKind.RATE_LIMITED, 7.0, 429)


@pytest.mark.parametrize("error_body", [
    {"error": {"message": "This model's maximum context length is 65536 tokens. However, you "
               "requested 70000 tokens (70000 in the messages, 0 in the completion). Please "
               "reduce the length of the messages or completion.",
               "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}},
    {"object": "error", "message": "Prompt contains 140000 tokens, too large for model with "
     "131072 maximum context length", "type": "invalid_request_error", "code": None},
])
async def test_context_length_400_bodies_are_context_length_exceeded(
    error_body: dict[str, Any],
) -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(400, json=error_body)

    with pytest.raises(ProviderError) as caught:
        await collect(provider(handler), ChatRequest(model="m", messages=[user("x")]))
    assert caught.value.kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED
    assert caught.value.limit_tokens in (65536, 131072)


async def test_an_error_inside_a_200_stream_is_raised_after_the_events_before_it() -> None:
    body = (FIXTURES / "openai-compatible/groq-error-event.sse").read_bytes()

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body)

    events: list[Any] = []
    p = provider(handler, base_url="https://api.groq.com/openai/v1")
    with pytest.raises(ProviderError) as caught:
        async with p:
            async for event in p.stream_chat(ChatRequest(model="m", messages=[user("x")])):
                events.append(event)
    assert caught.value.kind is ErrorKind.INVALID_REQUEST and caught.value.in_stream
    assert isinstance(events[0], MessageStart) and not any(
        isinstance(e, MessageEnd) for e in events)


async def test_models_come_from_the_models_endpoint() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert (request.method, str(request.url)) == ("GET", "https://openrouter.ai/api/v1/models")
        assert request.headers["authorization"] == "Bearer sk-test"
        return httpx2.Response(200, json={"data": [
            {"id": "x-ai/grok-4", "name": "Grok 4", "context_length": 256000,
             "top_provider": {"max_completion_tokens": 32000}},
            {"id": "openai/text-embedding-3-small"},
        ]})

    async with provider(handler, base_url="https://openrouter.ai/api/v1") as p:
        assert await p.list_models() == [ModelInfo(id="x-ai/grok-4", display_name="Grok 4",
                                                   context_window=256000,
                                                   max_output_tokens=32000)]


async def test_models_fall_back_to_the_profile_defaults_when_the_call_fails() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(500, text="boom")

    async with provider(handler, base_url="https://api.mistral.ai/v1") as p:
        models = await p.list_models()
    assert models == list(PROFILES["mistral"].default_models) and models


async def test_a_local_server_without_a_key_gets_no_authorization_header() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"object": "list", "data": [{"id": "qwen3:8b"}]})

    settings = ProviderSettings(protocol="openai", base_url="http://localhost:11434/v1/")
    async with OpenAICompatProvider(settings, transport=httpx2.MockTransport(handler)) as p:
        assert p.profile.name == "ollama"
        assert [m.id for m in await p.list_models()] == ["qwen3:8b"]
    assert str(seen[0].url) == "http://localhost:11434/v1/models"
    assert "authorization" not in seen[0].headers
