"""The Gemini cases of shared/cases/provider, each a test with its expected value.

Inputs are read from the case files themselves (the stream, schema or error body in the
"Minimal input" section); every fault class is also exercised with further inputs of the same
class, because the fix is for the class, not for the listed input.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from typing import Any

import httpx2
import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ContentDelta, MessageEnd, ToolCallReady, ToolCallsRequested
from apps.engine.messages import ChatRequest, Message, ToolDefinition, ToolResultBlock
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.base import ProviderSettings
from apps.engine.providers.gemini import GeminiProvider, GeminiTranslator
from apps.engine.providers.gemini.request import build_body
from apps.engine.providers.retry import RetryingProvider
from apps.engine.providers.schema import to_gemini_schema
from apps.engine.providers.sse import SSEDecoder
from apps.engine.replay import chunked, replay, replay_events
from tests.conftest import CASES

SIG = "SIG_PLACEHOLDER"


# -- reading the case files --------------------------------------------------------------------
def case_blocks(number: str, lang: str) -> list[str]:
    """The ``lang`` code blocks of case ``number``, in order."""
    [path] = CASES.glob(f"{number}-*.md")
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def case_stream(number: str) -> bytes:
    return case_blocks(number, "text")[0].encode()


def case_schema(number: str) -> dict[str, Any]:
    return json.loads(case_blocks(number, "json")[0])


def case_chunks(number: str) -> list[bytes]:
    """``chunks = [...]`` of a case's python block."""
    tree = ast.parse(case_blocks(number, "python")[0])
    [assign] = [n for n in tree.body if isinstance(n, ast.Assign)]
    return ast.literal_eval(assign.value)


def http_response(block: str) -> tuple[int, bytes]:
    head, _, body = block.partition("\n\n")
    return int(head.split()[1]), body.strip().encode()


# -- helpers -----------------------------------------------------------------------------------
def sse(*chunks: dict[str, Any], terminator: str = "\n") -> bytes:
    return b"".join(f"data: {json.dumps(c)}{terminator}{terminator}".encode() for c in chunks)


def cand(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def assembled(chunks: Iterable[bytes]) -> tuple[Message, list[Any], ProviderError | None]:
    events, error = replay_events("gemini", chunks)
    assembler = MessageAssembler("gemini")
    for event in events:
        assembler.feed(event)
    return assembler.message(), events, error


def tool_results(message: Message, text: str = "ok") -> Message:
    return Message(role="tool", content=[ToolResultBlock(tool_use_id=c.id, name=c.name,
                                                         content=text)
                                         for c in message.tool_calls()])


def calls_of(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["arguments"]) for c in summary["tool_calls"]]


# == 002 SSE-FRAMING: CRLF (and CR, LF) event terminators ======================================
def test_002_first_event_is_available_before_the_second_chunk_arrives() -> None:
    first, second = case_chunks("002")
    decoder, translator = SSEDecoder(), GeminiTranslator()
    early = [e for s in decoder.feed(first) for e in translator.feed(s)]
    assert [e for e in early if isinstance(e, ContentDelta)] == [ContentDelta("Hel")]
    summary = replay("gemini", [first, second])
    assert summary["text"] == "Hello" and summary["finish_reason"] == "STOP"
    assert summary["usage"]["input_tokens"] == 4 and summary["usage"]["output_tokens"] == 2


@pytest.mark.parametrize("terminator", [b"\r\n", b"\r", b"\n"], ids=["CRLF", "CR", "LF"])
@pytest.mark.parametrize("chunk_size", [None, 1, 2, 7])
def test_002_every_terminator_and_split_gives_the_same_result(terminator: bytes,
                                                              chunk_size: int | None) -> None:
    raw = b"".join(case_chunks("002")).replace(b"\r\n", terminator)
    summary = replay("gemini", chunked(raw, chunk_size))
    assert summary["text"] == "Hello" and summary["error"] is None
    assert summary["usage"]["total_tokens"] == 6
    assert "\r" not in json.dumps(summary)


def test_002_a_final_event_without_its_blank_line_is_still_delivered() -> None:
    raw = b"".join(case_chunks("002")).rstrip(b"\r\n")
    assert replay("gemini", [raw])["finish_reason"] == "STOP"


# == 036 REASONING-ROUNDTRIP: thoughtSignature back on its part ================================
def test_036_the_function_call_goes_back_with_its_signature() -> None:
    reply, _, error = assembled([case_stream("036")])
    assert error is None
    request = ChatRequest(model="gemini-3-pro-preview", messages=[
        Message(role="user", content="ls"), reply, tool_results(reply, "README.md src/")])
    assert build_body(request)["contents"] == [
        {"role": "user", "parts": [{"text": "ls"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "terminal-execute",
                                                      "args": {"command": "ls -F"}},
                                     "thoughtSignature": "CiQB_SIGNATURE_PLACEHOLDER"}]},
        {"role": "user", "parts": [{"functionResponse": {
            "name": "terminal-execute", "response": {"result": "README.md src/"}}}]},
    ]


def test_036_signatures_on_text_thought_and_empty_parts_stay_on_those_parts() -> None:
    raw = sse(
        cand({"text": "thinking", "thought": True, "thoughtSignature": "T1"}),
        cand({"text": "The answer", "thoughtSignature": "T2"}),
        cand({"text": " is 4."}),
        cand({"text": "", "thoughtSignature": "T3"}, finish="STOP"),
    )
    reply, _, _ = assembled([raw])
    parts = build_body(ChatRequest(model="gemini-3-flash-preview", messages=[
        Message(role="user", content="2+2?"), reply]))["contents"][1]["parts"]
    assert parts == [
        {"text": "thinking", "thought": True, "thoughtSignature": "T1"},
        {"text": "The answer", "thoughtSignature": "T2"},
        {"text": " is 4.", "thoughtSignature": "T3"},  # Gemini 3's trailing signed empty part
    ]


def test_036_parallel_calls_keep_the_one_signature_on_the_first_call_across_turns() -> None:
    turn1 = sse(cand({"functionCall": {"name": "a", "args": {"x": 1}}, "thoughtSignature": "S1"},
                     {"functionCall": {"name": "b", "args": {"y": 2}}}, finish="STOP"))
    turn2 = sse(cand({"functionCall": {"name": "c", "args": {"z": 3}}, "thoughtSignature": "S2"},
                     finish="STOP"))
    reply1, _, _ = assembled([turn1])
    reply2, _, _ = assembled([turn2])
    contents = build_body(ChatRequest(model="gemini-3-pro-preview", messages=[
        Message(role="user", content="go"), reply1, tool_results(reply1), reply2,
        tool_results(reply2)]))["contents"]
    signatures = [[p.get("thoughtSignature") for p in c["parts"]] for c in contents
                  if c["role"] == "model"]
    assert signatures == [["S1", None], ["S2"]]


def test_036_signatures_are_dropped_for_another_provider() -> None:
    reply, _, _ = assembled([case_stream("036")])
    foreign = reply.model_copy(update={"provider": "anthropic"})
    contents = build_body(ChatRequest(model="gemini-2.5-flash", messages=[
        Message(role="user", content="ls"), foreign, tool_results(foreign)]))["contents"]
    parts = contents[1]["parts"]
    assert parts == [{"functionCall": {"name": "terminal-execute", "args": {"command": "ls -F"}}}]


# == 037 REASONING-PARSE: only thought:true marks thinking ====================================
def test_037_thought_parts_are_reasoning_not_answer() -> None:
    summary = replay("gemini", [case_stream("037")])
    assert summary["reasoning"] == "**Working out the sum** The user asks for 2+2."
    assert summary["text"] == "2 + 2 = 4."
    assert summary["usage"]["reasoning_tokens"] == 20
    assert summary["usage"]["output_tokens"] == 6


def test_037_a_signature_alone_does_not_make_a_part_a_thought() -> None:
    raw = sse(cand({"text": "visible", "thoughtSignature": "S"}),
              cand({"text": "hidden", "thought": True, "thoughtSignature": "T"}),
              cand({"text": "more", "thought": False}, finish="STOP"))
    summary = replay("gemini", [raw])
    assert summary["text"] == "visiblemore" and summary["reasoning"] == "hidden"
    assert summary["thought_signatures"] == ["S", "T"]


def test_037_unknown_part_fields_never_fail_the_chunk() -> None:
    raw = sse(cand({"text": "a", "thought": True, "partMetadata": {"k": 1}, "videoMetadata": {}}),
              cand({"text": "b", "newField": [1, 2]}, finish="STOP"))
    summary = replay("gemini", [raw])
    assert (summary["reasoning"], summary["text"], summary["error"]) == ("a", "b", None)


# == 043 TOOLCALL-ASSEMBLY: same-name parallel calls stay separate =============================
def test_043_three_calls_to_the_same_tool_are_three_calls() -> None:
    message, events, error = assembled([case_stream("043")])
    assert error is None
    calls = message.tool_calls()
    assert [(c.name, c.input) for c in calls] == [
        ("read_file", {"path": "a.md"}), ("read_file", {"path": "b.md"}),
        ("read_file", {"path": "c.md"})]
    assert [c.thought_signature for c in calls] == [SIG, None, None]
    assert len({c.id for c in calls}) == 3
    ready = [e for e in events if isinstance(e, ToolCallReady)]
    [batch] = [e for e in events if isinstance(e, ToolCallsRequested)]
    assert batch.calls == [e.call for e in ready]
    assert events.index(batch) > events.index(ready[-1])


def test_043_the_replay_groups_calls_and_responses() -> None:
    message, _, _ = assembled([case_stream("043")])
    contents = build_body(ChatRequest(model="gemini-3-flash-preview", messages=[
        Message(role="user", content="read"), message, *(
            Message(role="tool", content=[ToolResultBlock(tool_use_id=c.id, name=c.name,
                                                          content=c.input["path"])])
            for c in reversed(message.tool_calls()))]))["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert [p["functionCall"]["args"]["path"] for p in contents[1]["parts"]] == [
        "a.md", "b.md", "c.md"]
    assert [p["functionResponse"]["response"]["result"] for p in contents[2]["parts"]] == [
        "a.md", "b.md", "c.md"]


def test_043_several_calls_in_one_chunk_and_interleaved_names() -> None:
    raw = sse(cand({"functionCall": {"name": "read", "args": {"p": 1}}},
                   {"functionCall": {"name": "read", "args": {"p": 2}}},
                   {"functionCall": {"name": "write", "args": {"p": 3}}}),
              cand({"functionCall": {"name": "read", "args": {"p": 4}}}, finish="STOP"))
    summary = replay("gemini", chunked(raw, 5))
    assert calls_of(summary) == [("read", {"p": 1}), ("read", {"p": 2}), ("write", {"p": 3}),
                                 ("read", {"p": 4})]


def test_043_calls_with_ids_keep_them() -> None:
    raw = sse(cand({"functionCall": {"name": "f", "args": {"a": 1}, "id": "x1"}},
                   {"functionCall": {"name": "f", "args": {"a": 2}, "id": "x2"}}, finish="STOP"))
    summary = replay("gemini", [raw])
    assert [c["id"] for c in summary["tool_calls"]] == ["x1", "x2"]


# == 044 TOOLCALL-ASSEMBLY: a nameless functionCall continues the previous call ================
def test_044_the_nameless_args_chunk_merges_into_the_named_call() -> None:
    message, events, error = assembled([case_stream("044")])
    assert error is None
    assert [(c.name, c.input) for c in message.tool_calls()] == [
        ("mcp_list_dir", {"path": "/some/path"})]
    assert sum(isinstance(e, ToolCallReady) for e in events) == 1
    contents = build_body(ChatRequest(model="gemini-2.5-flash", messages=[
        Message(role="user", content="list"), message, tool_results(message)]))["contents"]
    assert contents[1] == {"role": "model", "parts": [
        {"functionCall": {"name": "mcp_list_dir", "args": {"path": "/some/path"}}}]}


def test_044_split_calls_in_a_parallel_batch_each_get_their_args() -> None:
    raw = sse(cand({"functionCall": {"name": "a", "args": {}}}),
              cand({"functionCall": {"args": {"x": 1}}}),
              cand({"functionCall": {"name": "b"}}),
              cand({"functionCall": {"args": {"y": 2}}, "thoughtSignature": "LATE"}),
              cand(finish="STOP"))
    message, _, _ = assembled([raw])
    assert [(c.name, c.input, c.thought_signature) for c in message.tool_calls()] == [
        ("a", {"x": 1}, None), ("b", {"y": 2}, "LATE")]


def test_044_a_nameless_part_with_nothing_to_continue_is_never_a_call() -> None:
    raw = sse(cand({"text": "hi"}), cand({"functionCall": {"args": {"x": 1}}}, finish="STOP"))
    summary = replay("gemini", [raw])
    assert summary["tool_calls"] == [] and summary["text"] == "hi"
    assert summary["error"] is None


def test_044_a_no_argument_call_completes_with_empty_args() -> None:
    raw = sse(cand({"functionCall": {"name": "now"}}), cand({"text": ""}, finish="STOP"))
    assert calls_of(replay("gemini", [raw])) == [("now", {})]


def test_044_vertex_streamed_arguments_are_assembled() -> None:
    raw = sse(
        cand({"functionCall": {"name": "search", "willContinue": True}, "thoughtSignature": "V"}),
        cand({"functionCall": {"partialArgs": [
            {"jsonPath": "$.query", "stringValue": "new ", "willContinue": True},
            {"jsonPath": "$.limit", "numberValue": 5}], "willContinue": True}}),
        cand({"functionCall": {"partialArgs": [
            {"jsonPath": "$.query", "stringValue": "york"},
            {"jsonPath": "$.filters.exact", "boolValue": True},
            {"jsonPath": "$.tags[1]", "stringValue": "b"}], "willContinue": True}}),
        cand({"functionCall": {}}, finish="STOP"))
    message, _, _ = assembled(chunked(raw, 3))
    [call] = message.tool_calls()
    assert (call.name, call.thought_signature) == ("search", "V")
    assert call.input == {"query": "new york", "limit": 5, "filters": {"exact": True},
                          "tags": [None, "b"]}


# == 045 CHUNK-SHAPE: finishReason without content; cumulative usage ===========================
def test_045_a_content_less_final_chunk_still_finishes_with_the_last_usage() -> None:
    summary = replay("gemini", [case_stream("045")])
    assert summary["error"] is None
    assert summary["text"] == "Done" and summary["finish_reason"] == "STOP"
    assert (summary["usage"]["input_tokens"], summary["usage"]["output_tokens"],
            summary["usage"]["total_tokens"]) == (5, 2, 7)


def test_045_grounding_and_usage_on_chunks_without_content() -> None:
    raw = sse({**cand({"text": "x"}), "usageMetadata": {"promptTokenCount": 9}},
              {"candidates": [{"index": 0, "groundingMetadata": {"webSearchQueries": ["q"]}}]},
              {"candidates": [{"index": 0, "groundingMetadata": {}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 1,
                                 "totalTokenCount": 10}},
              {"usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2,
                                 "totalTokenCount": 11}})
    summary = replay("gemini", [raw])
    assert summary["grounding_metadata"] == {"webSearchQueries": ["q"]}
    assert summary["finish_reason"] == "STOP"
    assert summary["usage"] == {"input_tokens": 9, "output_tokens": 2, "cached_input_tokens": 0,
                                "cache_creation_input_tokens": None, "reasoning_tokens": 0,
                                "tool_use_prompt_tokens": 0, "total_tokens": 11}


def test_045_empty_candidates_and_empty_parts_are_fine() -> None:
    raw = sse({"candidates": []}, {"candidates": [{"content": {"parts": []}}]},
              cand({"text": "ok"}), {"candidates": [{"finishReason": "MAX_TOKENS"}]})
    summary = replay("gemini", [raw])
    assert (summary["text"], summary["finish_reason"], summary["error"]) == (
        "ok", "MAX_TOKENS", None)


def test_045_end_of_stream_without_a_finish_reason_is_interrupted() -> None:
    raw = sse({**cand({"text": "Do"}), "usageMetadata": {"promptTokenCount": 5}})
    summary = replay("gemini", [raw])
    assert summary["error"]["kind"] == "stream_interrupted" and summary["text"] == "Do"
    assert summary["finish_reason"] is None


# == 046 STREAM-ERROR: refusals and errors inside a 200 stream =================================
def test_046_a_blocked_prompt_is_content_blocked_not_an_empty_answer() -> None:
    events, error = replay_events("gemini", [case_stream("046")])
    assert error is not None and error.kind is ErrorKind.CONTENT_BLOCKED
    assert "SAFETY" in error.message and not error.retryable and error.in_stream
    assert not any(isinstance(e, MessageEnd) for e in events)


async def test_046_a_blocked_prompt_is_not_retried_with_the_same_request() -> None:
    requests: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return httpx2.Response(200, content=case_stream("046"))

    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    inner = GeminiProvider(ProviderSettings(protocol="gemini", base_url="https://g.test",
                                            api_key="k"), transport=httpx2.MockTransport(handler))
    async with inner:
        retrying = RetryingProvider(inner, sleep=sleep, rng=lambda: 0.5)
        with pytest.raises(ProviderError) as info:
            [e async for e in retrying.stream_chat(ChatRequest(
                model="gemini-2.5-flash", messages=[Message(role="user", content="x")]))]
    assert info.value.kind is ErrorKind.CONTENT_BLOCKED
    assert len(requests) == 1 and waits == []


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST",
                                    "SPII", "IMAGE_SAFETY"])
def test_046_a_blocked_answer_is_content_blocked_and_its_partial_calls_dropped(reason: str
                                                                               ) -> None:
    raw = sse(cand({"text": "Once upon"}), cand({"functionCall": {"name": "f"}}),
              {"candidates": [{"finishReason": reason, "safetyRatings": []}]})
    events, error = replay_events("gemini", [raw])
    assert error is not None and error.kind is ErrorKind.CONTENT_BLOCKED
    assert reason in error.message
    assert not any(isinstance(e, (ToolCallReady, MessageEnd)) for e in events)


def test_046_malformed_function_call_is_a_distinct_retryable_outcome() -> None:
    raw = sse({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "index": 0}]})
    _, error = replay_events("gemini", [raw])
    assert error is not None and error.kind is ErrorKind.SERVER and error.retryable
    assert "MALFORMED_FUNCTION_CALL" in error.message


@pytest.mark.parametrize(("error_body", "kind"), [
    ({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
     "overloaded"),
    ({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}},
     "rate_limited"),
    ({"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}, "server"),
    ({"error": {"code": 400, "message": "The input token count (9) exceeds the maximum number of"
                " tokens allowed (5).", "status": "INVALID_ARGUMENT"}}, "context_length_exceeded"),
])
def test_046_an_error_object_mid_stream_is_classified_from_its_body(error_body: dict[str, Any],
                                                                     kind: str) -> None:
    raw = sse(cand({"text": "partial"}), error_body)
    summary = replay("gemini", [raw])
    assert summary["error"]["kind"] == kind and summary["error"]["in_stream"]
    assert summary["finish_reason"] is None and summary["usage"] is None


def test_046_an_sse_error_event_is_classified_too() -> None:
    raw = (b'event: error\ndata: {"error": {"code": 503, "status": "UNAVAILABLE", '
           b'"message": "busy"}}\n\n')
    assert replay("gemini", [raw])["error"]["kind"] == "overloaded"


# == 047 / 048 / 049 / 051 SCHEMA-SANITIZE ====================================================
def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in _keys(v)}
    if isinstance(node, list):
        return {k for v in node for k in _keys(v)}
    return set()


def test_047_no_additional_properties_at_any_depth_and_nothing_else_changes() -> None:
    converted = to_gemini_schema(case_schema("047"))
    assert "additionalProperties" not in _keys(converted)
    assert converted == {
        "type": "object",
        "properties": {
            "edits": {"type": "array", "items": {
                "type": "object",
                "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                "required": ["oldText", "newText"]}},
            "options": {"anyOf": [
                {"type": "object", "properties": {"dryRun": {"type": "boolean"}}},
                {"type": "string"}]}},
        "required": ["edits"]}


def test_047_the_sent_declaration_has_no_additional_properties() -> None:
    tool = ToolDefinition(name="edit", parameters=case_schema("047"))
    body = build_body(ChatRequest(model="gemini-2.5-flash", tools=[tool],
                                  messages=[Message(role="user", content="x")]))
    assert "additionalProperties" not in json.dumps(body)


def test_048_refs_are_inlined_and_defs_dropped() -> None:
    converted = to_gemini_schema(case_schema("048"))
    assert not {"$ref", "$defs"} & _keys(converted)
    assert converted["properties"]["address"] == {
        "type": "object",
        "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        "required": ["street", "city"]}
    assert converted["required"] == ["name", "address"]


def test_048_the_recursive_variant_terminates_with_a_permissive_object() -> None:
    schema = {"$defs": {"Node": {"type": "object", "properties": {
        "value": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
        "type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}}
    converted = to_gemini_schema(schema)
    assert converted == {"type": "object", "properties": {"root": {
        "type": "object", "properties": {
            "value": {"type": "string"},
            "children": {"type": "array", "items": {"type": "object"}}}}}}


def test_049_type_arrays_become_nullable_or_any_of() -> None:
    converted = to_gemini_schema(case_schema("049"))
    item = converted["properties"]["issues"]["items"]
    assert item["properties"]["suggestion"] == {
        "type": "string", "nullable": True, "description": "Suggested fix; null when none"}
    assert converted["properties"]["score"] == {"anyOf": [{"type": "integer"},
                                                          {"type": "number"}]}
    assert all(not isinstance(n.get("type"), list) for n in _nodes(converted))
    assert item["required"] == ["problem", "suggestion"]


def _nodes(node: Any) -> list[dict[str, Any]]:
    if not isinstance(node, dict):
        return []
    children = [*node.get("properties", {}).values(), *node.get("anyOf", []),
                *([node["items"]] if "items" in node else [])]
    return [node, *(n for c in children for n in _nodes(c))]


def test_051_consts_become_string_enums() -> None:
    converted = to_gemini_schema(case_schema("051"))
    assert converted["properties"]["operation"] == {
        "type": "string", "description": "What to do",
        "enum": ["insert_text", "delete_text", "replace_text"]}
    assert converted["properties"]["mode"] == {"type": "string", "enum": ["strict"]}
    assert "const" not in _keys(converted)
    for node in _nodes(converted):
        if "enum" in node:
            assert node["type"] == "string" and all(isinstance(v, str) for v in node["enum"])


def test_051_a_discriminated_union_keeps_each_branch_with_its_const_tag() -> None:
    schema = {"type": "object", "properties": {"shape": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
         "required": ["kind", "r"]},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
         "required": ["kind", "side"]}]}}}
    assert to_gemini_schema(schema)["properties"]["shape"] == {"anyOf": [
        {"type": "object", "properties": {"kind": {"type": "string", "enum": ["circle"]},
                                          "r": {"type": "number"}}, "required": ["kind", "r"]},
        {"type": "object", "properties": {"kind": {"type": "string", "enum": ["square"]},
                                          "side": {"type": "number"}},
         "required": ["kind", "side"]}]}


# == 056 ERROR-CLASSIFY: Gemini's context overflow wording =====================================
def _classify(status: int, body: bytes) -> ProviderError:
    provider = GeminiProvider(ProviderSettings(protocol="gemini", base_url="https://g.test"))
    return provider.classify_error(body, status=status, headers={})


@pytest.mark.parametrize(("variant", "counts"), [(0, (218152, 65536)), (1, (None, 1048576))])
def test_056_both_wordings_are_context_length_exceeded_with_counts(variant: int,
                                                                   counts: tuple) -> None:
    status, body = http_response(case_blocks("056", "text")[variant])
    for wrapped in (body, b"[" + body + b"]"):  # gateways wrap the body in an array
        error = _classify(status, wrapped)
        assert error.kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED
        assert (error.input_tokens, error.limit_tokens) == counts


def test_056_the_vertex_wording_is_recognised_too() -> None:
    body = json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": (
        "Unable to submit request because the input token count is 1200000 but model only "
        "supports up to 1048576. Reduce the input token count and try again.")}}).encode()
    error = _classify(400, body)
    assert error.kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED
    assert (error.input_tokens, error.limit_tokens) == (1200000, 1048576)


def test_056_another_invalid_argument_stays_a_non_retryable_invalid_request() -> None:
    body = json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": (
        "Function call is missing a thought_signature in functionCall parts.")}}).encode()
    error = _classify(400, body)
    assert error.kind is ErrorKind.INVALID_REQUEST and not error.retryable


async def test_056_the_http_path_raises_context_length_exceeded() -> None:
    status, body = http_response(case_blocks("056", "text")[0])
    transport = httpx2.MockTransport(lambda r: httpx2.Response(status, content=body))
    async with GeminiProvider(ProviderSettings(protocol="gemini", base_url="https://g.test"),
                              transport=transport) as provider:
        with pytest.raises(ProviderError) as info:
            [e async for e in provider.stream_chat(ChatRequest(
                model="gemini-2.0-flash", messages=[Message(role="user", content="long")]))]
    assert info.value.kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED and info.value.status == 400
