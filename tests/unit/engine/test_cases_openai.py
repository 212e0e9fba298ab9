"""shared/cases/provider, OpenAI-compatible cases: each case's input with its expected value, and
more inputs of each fault class than the one listed (the README asks to fix classes, not cases).

The case inputs are copied from the case files (placeholders as there)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.engine.errors import ErrorKind
from apps.engine.events import ToolCallReady
from apps.engine.messages import (
    ChatRequest,
    Message,
    ReasoningParams,
    ToolResultBlock,
    ToolUseBlock,
)
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.classify import classify_error
from apps.engine.providers.openai_compat import build_body
from apps.engine.providers.profiles import PROFILES
from apps.engine.replay import chunked, replay, replay_events
from tests.conftest import CASES

CHUNK_SIZES = [None, 1, 7]


def run(body: str, chunk_size: int | None = None) -> dict[str, Any]:
    return replay("openai", chunked(body.encode(), chunk_size))


def frames(*chunks: dict[str, Any], done: bool = True) -> str:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + (
        "data: [DONE]\n\n" if done else "")


def calls(result: dict[str, Any]) -> list[tuple[Any, str, dict[str, Any]]]:
    return [(c["id"], c["name"], c["arguments"]) for c in result["tool_calls"]]


def test_the_case_files_are_there() -> None:
    for number in ("007", "013", "017", "018", "020", "021", "024", "027", "029", "030", "031",
                   "058"):
        assert list(CASES.glob(f"{number}-*.md")), number


# -- 007 SSE-NONDATA: comment keep-alives -----------------------------------------------------

CASE_007 = (
    ": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n"
    'data: {"id":"gen-0000000000-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1739458867,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"system_fingerprint":"fp_XXXX"}\n\n'  # noqa: E501
    'data: {"id":"gen-0000000000-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1739458867,"choices":[{"index":0,"delta":{"role":"assistant","content":"亚"},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"system_fingerprint":"fp_XXXX"}\n\n'  # noqa: E501
    'data: {"id":"gen-0000000000-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1739458867,"choices":[{"index":0,"delta":{},"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}],"system_fingerprint":"fp_XXXX"}\n\n'  # noqa: E501
    "data: [DONE]\n\n"
)


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_007_comment_lines_are_not_parsed(chunk_size: int | None) -> None:
    result = run(CASE_007, chunk_size)
    assert (result["text"], result["finish_reason"], result["error"]) == ("亚", "stop", None)


@pytest.mark.parametrize("noise", [
    ": keepalive\n\n",  # Grok through AIClient2API
    ":\n\n",
    "id: 7\n\n",  # a blank line after id: dispatches nothing
    "retry: 3000\n\n",
    "data:\n\n",  # empty data
    "data: : ping\n\n",  # a comment-shaped keep-alive inside data
])
def test_007_class_keep_alives_of_every_shape_are_ignored(noise: str) -> None:
    body = CASE_007.replace("data: {", noise + "data: {", 2)
    assert run(body)["text"] == "亚"


def test_007_class_other_non_json_payloads_still_fail_loudly() -> None:
    body = CASE_007.replace("data: [DONE]", "data: <html>Bad Gateway</html>\n\ndata: [DONE]")
    assert run(body)["error"]["kind"] == "server"


# -- 013 STREAM-ERROR: top-level error after HTTP 200 -----------------------------------------

CASE_013 = (
    'data: {"id":"gen-XXXX","object":"chat.completion.chunk","created":1750000000,"model":"vendor/model","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\\"command\\": \\"ls -"}}]},"finish_reason":null}]}\n\n'  # noqa: E501
    'data: {"id":"gen-XXXX","object":"chat.completion.chunk","created":1750000002,"model":"vendor/model","error":{"code":502,"message":"Provider disconnected","metadata":{"error_type":"provider_unavailable"}},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}\n\n'  # noqa: E501
    "data: [DONE]\n\n"
)


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_013_error_chunk_fails_the_turn_and_drops_the_half_call(chunk_size: int | None) -> None:
    events, error = replay_events("openai", chunked(CASE_013.encode(), chunk_size))
    assert error is not None and error.retryable and error.in_stream
    assert error.kind is ErrorKind.SERVER and "Provider disconnected" in error.message
    assert not any(isinstance(e, ToolCallReady) for e in events)
    result = run(CASE_013, chunk_size)
    assert result["tool_calls"] == [] and result["finish_reason"] is None


def test_013_variant_error_without_choices_then_eof() -> None:
    body = frames({"id": "c", "choices": [{"index": 0, "delta": {"content": "partial"}}]},
                  {"error": {"message": "upstream failure", "type": "server_error",
                             "code": "internal_error"}}, done=False)
    error = run(body)["error"]
    assert (error["kind"], error["message"]) == ("server", "upstream failure")


@pytest.mark.parametrize(("chunk", "kind"), [
    # a bare string error (kronk-style gateways)
    ({"error": "Worker local total request limit reached (33/32)"}, "server"),
    ({"error": {"message": "Rate limit exceeded: free-models-per-min", "code": 429}},
     "rate_limited"),
    ({"error": {"message": "overloaded", "type": "overloaded_error"}}, "overloaded"),
    ({"choices": [{"index": 0, "delta": {}, "finish_reason": "error",
                   "native_finish_reason": "upstream_timeout"}]}, "server"),
])
def test_013_class_every_in_stream_error_shape_is_terminal(chunk: dict[str, Any],
                                                           kind: str) -> None:
    body = frames({"id": "c", "choices": [{"index": 0, "delta": {"content": "a"}}]}, chunk,
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    result = run(body)
    assert result["error"]["kind"] == kind and result["finish_reason"] is None


# -- 017 STREAM-TERMINATION: finish_reason without [DONE] -------------------------------------

CASE_017 = (
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"All done."},"finish_reason":null}]}\n\n'  # noqa: E501
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'  # noqa: E501
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":3,"total_tokens":24}}\n\n'  # noqa: E501
)


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_017_finish_reason_then_eof_completes_normally(chunk_size: int | None) -> None:
    result = run(CASE_017, chunk_size)
    assert (result["text"], result["finish_reason"], result["error"]) == ("All done.", "stop",
                                                                          None)
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (21, 3)


def test_017_negative_control_cut_after_the_first_chunk_is_incomplete() -> None:
    error = run(CASE_017.split("\n\n")[0] + "\n\n")["error"]
    assert error["kind"] == "stream_interrupted"
    assert ErrorKind(error["kind"]).retryable


def test_017_class_a_cut_tool_call_is_not_emitted() -> None:
    body = frames({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]}}]}, done=False)
    result = run(body)
    assert result["error"]["kind"] == "stream_interrupted" and result["tool_calls"] == []


def test_017_class_done_alone_also_ends_the_turn() -> None:
    # The kimi recording: no finish_reason at all, but usage and [DONE]; the pending call is
    # complete because [DONE] says the response is.
    body = frames({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "0", "function": {"name": "llm_version", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"content": ""}}], "usage": {"prompt_tokens": 5}})
    result = run(body)
    assert result["error"] is None and result["finish_reason"] is None
    assert calls(result) == [("0", "llm_version", {})]


def test_017_class_an_unterminated_final_event_is_still_read() -> None:
    # The SSE layer delivers a last event without its blank line; finish_reason is in it.
    assert run(CASE_017.rstrip("\n"))["usage"]["input_tokens"] == 21


# -- 018 / 020 / 021 TOOLCALL-ASSEMBLY --------------------------------------------------------

CASE_018 = (
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}\n\n'  # noqa: E501
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":"{\\"path\\": "}}]},"finish_reason":null}]}\n\n'  # noqa: E501
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":"\\"README.md\\"}"}}]},"finish_reason":null}]}\n\n'  # noqa: E501
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'  # noqa: E501
    "data: [DONE]\n\n"
)


def tool_frames(*deltas: list[dict[str, Any]], finish: bool = True) -> str:
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": d}}]} for d in deltas]
    if finish:
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return frames(*chunks)


def fn(name: str | None = None, arguments: Any = None, **fields: Any) -> dict[str, Any]:
    function = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    return {**fields, "type": "function", "function": function}


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_018_a_repeated_name_is_not_concatenated(chunk_size: int | None) -> None:
    assert calls(run(CASE_018, chunk_size)) == [("call_abc", "read_file",
                                                 {"path": "README.md"})]


def test_018_counter_case_a_fragmented_name_is_joined() -> None:
    body = tool_frames([fn("get_", "", index=0, id="call_1")],
                       [fn("weather", '{"city":"Paris"}', index=0)])
    assert calls(run(body)) == [("call_1", "get_weather", {"city": "Paris"})]


def test_018_class_name_and_id_repeated_in_every_chunk_with_many_repeats() -> None:
    body = tool_frames(*[[fn("Bash", piece, index=0, id="call_b")]
                         for piece in ('{"co', 'mmand"', ': "ls"', "}")])
    assert calls(run(body)) == [("call_b", "Bash", {"command": "ls"})]


def test_018_class_two_calls_with_the_same_name_stay_two_calls() -> None:
    body = tool_frames([fn("web_search", '{"q":"a"}', index=0, id="c0")],
                       [fn("web_search", '{"q":"b"}', index=1, id="c1")])
    assert calls(run(body)) == [("c0", "web_search", {"q": "a"}),
                                ("c1", "web_search", {"q": "b"})]


CASE_020_A = (
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_A","type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":\\"London\\"}"}}]},"finish_reason":null}]}\n\n'  # noqa: E501
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_B","type":"function","function":{"name":"get_time","arguments":"{\\"tz\\":\\"UTC\\"}"}}]},"finish_reason":null}]}\n\n'  # noqa: E501
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'  # noqa: E501
    "data: [DONE]\n\n"
)
CASE_020_B = (
    'data: {"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_A","type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":\\"London\\"}"}},{"id":"call_B","type":"function","function":{"name":"get_time","arguments":"{\\"tz\\":\\"UTC\\"}"}}]},"finish_reason":"tool_calls"}]}\n\n'  # noqa: E501
    "data: [DONE]\n\n"
)
TWO_CALLS = [("call_A", "get_weather", {"city": "London"}), ("call_B", "get_time", {"tz": "UTC"})]


@pytest.mark.parametrize("body", [CASE_020_A, CASE_020_B], ids=["one-per-chunk", "one-array"])
def test_020_calls_without_index_stay_separate(body: str) -> None:
    assert calls(run(body)) == TWO_CALLS


def test_020_class_unindexed_fragments_without_name_continue_the_current_call() -> None:
    body = tool_frames([fn("get_weather", '{"city":', id="call_A")],
                       [fn(None, '"London"}', id="call_A_frag")],  # a fresh id per fragment
                       [fn("get_time", '{"tz":"UTC"}', id="call_B")])
    assert calls(run(body)) == TWO_CALLS


def test_020_class_unindexed_calls_without_ids_split_on_a_new_name() -> None:
    body = tool_frames([fn("get_weather", '{"city":"London"}')], [fn("get_time", "{")],
                       [fn(None, '"tz":"UTC"}')])
    assert [(n, a) for _, n, a in calls(run(body))] == [(n, a) for _, n, a in TWO_CALLS]


def test_020_class_unindexed_same_tool_twice_in_one_array_is_two_calls() -> None:
    body = tool_frames([fn("get_weather", '{"city":"London"}'),
                        fn("get_weather", '{"city":"Paris"}')])
    assert [a for _, _, a in calls(run(body))] == [{"city": "London"}, {"city": "Paris"}]


CASE_021 = "".join(
    f'data: {{"id":"chatcmpl-f2a9","object":"chat.completion.chunk","created":1747748383,"model":"default","choices":[{{"index":0,"delta":{d},"logprobs":null,"finish_reason":{f}}}]}}\n\n'  # noqa: E501
    for d, f in [
        ('{"role":"assistant","content":""}', "null"),
        ('{"tool_calls":[{"index":0,"function":{"name":"get_current_weather","arguments":"{\\""}}]}', "null"),  # noqa: E501
        ('{"tool_calls":[{"index":0,"function":{"name":"get_current_weather","arguments":"location"}}]}', "null"),  # noqa: E501
        ('{"tool_calls":[{"index":0,"function":{"name":"get_current_weather","arguments":"\\":"}}]}', "null"),  # noqa: E501
        ('{"tool_calls":[{"index":0,"function":{"name":"get_current_weather","arguments":" \\"Paris\\"}"}}]}', "null"),  # noqa: E501
        ("{}", '"tool_calls"'),
    ]
) + "data: [DONE]\n\n"


def test_021_missing_id_gets_one_stable_minted_id_used_in_history() -> None:
    events, error = replay_events("openai", [CASE_021.encode()])
    assert error is None
    result = run(CASE_021)
    assert calls(result) == [(None, "get_current_weather", {"location": "Paris"})]
    assembler = MessageAssembler("openai")
    for event in events:
        assembler.feed(event)
    turn = assembler.message()
    minted = assembler.tool_calls[0].id
    assert minted.startswith("call_") and turn.tool_calls()[0].id == minted
    result_msg = Message(role="tool", content=[ToolResultBlock(tool_use_id=minted,
                                                               content="18C")])
    wire = build_body(ChatRequest(model="m", messages=[Message(role="user", content="w?"), turn,
                                                       result_msg]),
                      PROFILES["vllm"])["messages"]
    assert wire[1]["tool_calls"][0]["id"] == wire[2]["tool_call_id"] == minted


def test_021_class_a_real_id_in_a_later_delta_wins() -> None:
    body = tool_frames([fn("f", "{", index=0)], [fn(None, "}", index=0, id="call_real")])
    assert calls(run(body)) == [("call_real", "f", {})]


def test_021_class_parallel_calls_without_ids_get_distinct_ids() -> None:
    events, _ = replay_events("openai", [tool_frames([fn("f", "{}", index=0)],
                                                     [fn("f", "{}", index=1)]).encode()])
    ids = [e.call.id for e in events if isinstance(e, ToolCallReady)]
    assert len(ids) == 2 and len(set(ids)) == 2


# -- 024 TOOLCALL-ARGS ------------------------------------------------------------------------

CASE_024 = (
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_snap","type":"function","function":{"name":"get_page_snapshot","arguments":""}}]},"finish_reason":null}]}\n\n'  # noqa: E501
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'  # noqa: E501
    "data: [DONE]\n\n"
)
CASE_024_CONTROL = CASE_024.replace(
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},',
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
    '{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]}\n\n'
    'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},', 1)


@pytest.mark.parametrize("body", [CASE_024, CASE_024_CONTROL], ids=["empty", "control"])
def test_024_empty_arguments_are_an_empty_object(body: str) -> None:
    assert calls(run(body)) == [("call_snap", "get_page_snapshot", {})]


def test_024_replayed_arguments_are_the_string_braces_never_empty() -> None:
    turn = Message(role="assistant", provider="openai",
                   content=[ToolUseBlock(id="call_snap", name="get_page_snapshot")])
    wire = build_body(ChatRequest(model="m", messages=[turn]), PROFILES["generic"])
    assert wire["messages"][0]["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize(("arguments", "expected"), [
    ("  \n", {}), ({"city": "Paris"}, {"city": "Paris"}), ({}, {}),
])
def test_024_class_blank_text_and_objects_are_accepted(arguments: Any,
                                                       expected: dict[str, Any]) -> None:
    body = tool_frames([fn("f", arguments, index=0, id="c")])
    assert calls(run(body)) == [("c", "f", expected)]


@pytest.mark.parametrize("arguments", ['{"path": "/tmp/a', "{'a': 1}", '"just a string"'])
def test_024_class_unparseable_text_is_reported_not_an_empty_object(arguments: str) -> None:
    events, error = replay_events("openai", [tool_frames([fn("f", arguments, index=0,
                                                             id="c")]).encode()])
    assert error is None
    [ready] = [e for e in events if isinstance(e, ToolCallReady)]
    assert ready.call.arguments == {} and ready.call.arguments_error is not None


# -- 027 CHUNK-SHAPE --------------------------------------------------------------------------

CASE_027 = (
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1750000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}],"usage":null}\n\n'  # noqa: E501
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1750000000,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}\n\n'  # noqa: E501
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1750000000,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}\n\n'  # noqa: E501
    "data: [DONE]\n\n"
)


@pytest.mark.parametrize("body", [CASE_027, CASE_027.replace('"choices":[],', "")],
                         ids=["empty-choices", "no-choices"])
def test_027_usage_only_chunk_is_read_for_usage(body: str) -> None:
    result = run(body)
    assert (result["text"], result["finish_reason"], result["error"]) == ("Hi", "stop", None)
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (10, 1)


def test_027_class_content_usage_and_finish_in_one_chunk() -> None:
    body = frames({"choices": [{"index": 0, "delta": {"content": "Hi"},
                                "finish_reason": "stop"}], "usage": {"prompt_tokens": 4}})
    result = run(body)
    assert (result["text"], result["finish_reason"], result["usage"]["input_tokens"]) == (
        "Hi", "stop", 4)


def test_027_class_control_chunks_with_null_or_odd_choices_are_skipped() -> None:
    body = frames({"choices": None, "prompt_filter_results": []}, {"choices": [None, 3]},
                  {"object": "chat.completion.chunk"},
                  {"choices": [{"index": 0, "delta": None, "finish_reason": None}]},
                  {"choices": [{"index": 0, "delta": {"content": "ok"},
                                "finish_reason": "stop"}]})
    result = run(body)
    assert (result["text"], result["error"]) == ("ok", None)


def test_027_class_citations_on_a_chunk_without_content_are_kept() -> None:
    body = frames({"citations": ["https://a"], "choices": []},
                  {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]})
    assert run(body)["citations"] == ["https://a"]


# -- 029 REASONING-PARSE ----------------------------------------------------------------------

CASE_029 = (
    'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"We"}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{"content":"","reasoning":" need"}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{"content":"","reasoning":" answer"}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{"content":"42"},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
)


@pytest.mark.parametrize("body", [CASE_029, CASE_029.replace('"reasoning"',
                                                             '"reasoning_content"')],
                         ids=["reasoning", "reasoning_content"])
def test_029_both_field_names_are_reasoning(body: str) -> None:
    result = run(body)
    assert (result["reasoning"], result["text"]) == ("We need answer", "42")


def test_029_edge_both_fields_in_one_delta_are_read_once() -> None:
    body = frames({"choices": [{"index": 0, "delta": {"reasoning_content": "X",
                                                      "reasoning": "X"}}]},
                  {"choices": [{"index": 0, "delta": {"content": "y"}, "finish_reason": "stop"}]})
    assert run(body)["reasoning"] == "X"


def test_029_class_mistral_thinking_parts_are_reasoning_not_text() -> None:
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "We need"}]}
    body = frames({"choices": [{"index": 0, "delta": {"content": [thinking]}}]},
                  {"choices": [{"index": 0, "delta": {"content": [{"type": "text",
                                                                   "text": "42"}]},
                                "finish_reason": "stop"}]})
    result = run(body)
    assert (result["reasoning"], result["text"]) == ("We need", "42")


def test_029_class_null_reasoning_next_to_text_adds_nothing() -> None:
    body = frames({"choices": [{"index": 0, "delta": {"content": "42", "reasoning": None,
                                                      "reasoning_content": None}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    result = run(body)
    assert (result["reasoning"], result["text"]) == ("", "42")


# -- 030 REASONING-ROUNDTRIP ------------------------------------------------------------------

CASE_030_STREAM = frames(
    {"id": "d1", "model": "deepseek-reasoner", "choices": [
        {"index": 0, "delta": {"role": "assistant",
                               "reasoning_content": "User wants weather; call tool."}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "call_0", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}, done=False)


def deepseek_history(turn: Message) -> list[Message]:
    return [Message(role="user", content="What's the weather in Paris?"), turn,
            Message(role="tool", content=[ToolResultBlock(tool_use_id="call_0",
                                                          content='{"temp_c":18}')])]


def test_030_the_assistant_message_at_index_2_carries_its_reasoning() -> None:
    events, error = replay_events("openai", [CASE_030_STREAM.encode()])
    assert error is None
    assembler = MessageAssembler("openai")
    for event in events:
        assembler.feed(event)
    request = ChatRequest(model="deepseek-reasoner", system="You are a helpful agent.",
                          messages=deepseek_history(assembler.message()))
    wire = build_body(request, PROFILES["deepseek"])["messages"]
    assert wire[2] == {"role": "assistant", "content": "",
                       "reasoning_content": "User wants weather; call tool.",
                       "tool_calls": [{"id": "call_0", "type": "function", "function": {
                           "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}


def test_030_a_thinking_turn_without_reasoning_still_sends_an_empty_field() -> None:
    turn = Message(role="assistant", provider="openai",
                   content=[ToolUseBlock(id="call_0", name="get_weather", input={})])
    wire = build_body(ChatRequest(model="deepseek-v4-pro", messages=deepseek_history(turn)),
                      PROFILES["deepseek"])["messages"]
    assert wire[1]["reasoning_content"] == ""


def test_030_the_field_is_dropped_for_other_providers() -> None:
    turn = Message(role="assistant", provider="openai", reasoning_content="r",
                   content=[ToolUseBlock(id="call_0", name="get_weather", input={})])
    for profile in ("openai", "generic", "mistral", "groq"):
        wire = build_body(ChatRequest(model="m", messages=deepseek_history(turn)),
                          PROFILES[profile])["messages"]
        assert "reasoning_content" not in wire[1], profile


# -- 031 REQUEST-PARAMS -----------------------------------------------------------------------


def deepseek_params(model: str, **params: Any) -> dict[str, Any]:
    body = build_body(ChatRequest(model=model, messages=[Message(role="user", content="hi")],
                                  reasoning=ReasoningParams(**params)), PROFILES["deepseek"])
    return {k: body[k] for k in ("thinking", "reasoning_effort") if k in body}


def test_031_disabled_thinking_is_never_sent_with_an_effort() -> None:
    assert deepseek_params("deepseek-v4-flash", thinking_type="disabled", effort="high") == {
        "thinking": {"type": "disabled"}}


def test_031_enabled_thinking_passes_the_effort_through() -> None:
    assert deepseek_params("deepseek-v4-flash", thinking_type="enabled", effort="high") == {
        "thinking": {"type": "enabled"}, "reasoning_effort": "high"}


@pytest.mark.parametrize("params", [{"thinking_type": "disabled"}, {"effort": "none"}])
def test_031_no_reasoning_is_an_explicit_disable(params: dict[str, Any]) -> None:
    assert deepseek_params("deepseek-v4-flash", **params) == {"thinking": {"type": "disabled"}}


def test_031_a_model_that_cannot_disable_thinking_gets_no_disable_flag() -> None:
    assert deepseek_params("deepseek-reasoner", thinking_type="disabled") == {}
    assert deepseek_params("deepseek-reasoner", thinking_type="disabled", effort="high") == {}


@pytest.mark.parametrize("effort", ["minimal", "low", "medium", "high", "xhigh", "max"])
def test_031_class_no_combination_of_settings_sends_the_rejected_pair(effort: str) -> None:
    for thinking in ("enabled", "disabled", "adaptive", None):
        body = deepseek_params("deepseek-v4-flash", thinking_type=thinking, effort=effort)
        assert not (body.get("thinking") == {"type": "disabled"} and "reasoning_effort" in body)


# -- 058 ERROR-CLASSIFY -----------------------------------------------------------------------

CASE_058_HTTP = [
    '{"error":{"message":"This model\'s maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}',  # noqa: E501
    '{"error":{"message":"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 509178 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":null}}',  # noqa: E501
    '{"object":"error","message":"Prompt contains 140000 tokens, too large for model with 131072 maximum context length","type":"invalid_request_error","param":null,"code":null}',  # noqa: E501
    '{"error":{"message":"The total length of all messages is too long.","type":"invalid_message","code":400}}',  # noqa: E501
]
CASE_058_STREAM = 'data: {"type":"error","sequence_number":2,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}\n\n'  # noqa: E501


@pytest.mark.parametrize("body", CASE_058_HTTP, ids=["openai", "azure", "mistral", "perplexity"])
def test_058_http_overflow_spellings_are_context_length_exceeded(body: str) -> None:
    assert classify_error(body.encode(), provider="openai",
                          status=400).kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED


def test_058_streamed_overflow_event_is_context_length_exceeded() -> None:
    assert run(CASE_058_STREAM)["error"]["kind"] == "context_length_exceeded"


@pytest.mark.parametrize(("body", "counts"), [
    # OpenRouter
    ({"error": {"message": "This endpoint's maximum context length is 128000 tokens. However, "
                "you requested about 150000 tokens (140000 of text input, 10000 in the output)."
                " Please reduce the length of either one, or use the \"middle-out\" transform "
                "to compress your prompt automatically.", "code": 400}}, (150000, 128000)),
    # xAI (cline/cline#3120)
    ({"code": "Client specified an invalid argument", "error": "This model's maximum prompt "
      "length is 131072 but the request contains 136973 tokens."}, (136973, 131072)),
    # vLLM
    ({"object": "error", "message": "'max_tokens' or 'max_completion_tokens' is too large: "
      "1000. This model's maximum context length is 4096 tokens and your request has 3500 "
      "input tokens (1000 > 4096 - 3500).", "type": "BadRequestError", "code": 400},
     (3500, 4096)),
    # llama.cpp: the counts are fields beside the message
    ({"error": {"code": 400, "message": "the request exceeds the available context size, try "
                "increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000,
                "n_ctx": 4096}}, (5000, 4096)),
    # older OpenAI wording
    ({"error": {"message": "This model's maximum context length is 4097 tokens, however you "
                "requested 4322 tokens (4066 in your prompt; 256 for the completion). Please "
                "reduce your prompt; or completion length.", "type": "invalid_request_error"}},
     (4322, 4097)),
    # Hugging Face TGI / Together
    ({"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8193. "
      "Given: 8000 `inputs` tokens and 1000 `max_new_tokens`", "error_type": "validation"},
     (8000, 8193)),
])
def test_058_class_more_overflow_spellings_with_their_counts(
    body: dict[str, Any], counts: tuple[int | None, int | None]
) -> None:
    error = classify_error(body, provider="openai", status=400)
    assert error.kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED
    assert (error.input_tokens, error.limit_tokens) == counts


@pytest.mark.parametrize("body", [
    {"error": {"message": "Invalid 'messages[1].content': expected a string, got null.",
               "type": "invalid_request_error", "param": "messages.[1].content", "code": None}},
    {"error": {"message": "Unrecognized request argument supplied: thinking",
               "type": "invalid_request_error"}},
])
def test_058_non_overflow_400s_stay_invalid_request(body: dict[str, Any]) -> None:
    assert classify_error(body, provider="openai",
                          status=400).kind is ErrorKind.INVALID_REQUEST


def test_058_in_stream_and_http_use_the_same_table() -> None:
    body = json.loads(CASE_058_HTTP[2])
    in_stream = run(frames({"choices": []}, {**body, "error": body["message"]}, done=False))
    assert in_stream["error"]["kind"] == "context_length_exceeded"
