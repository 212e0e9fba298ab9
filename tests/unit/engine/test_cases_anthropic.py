"""shared/cases/provider, Anthropic stream cases (010, 011, 015, 026, 032, 034, 061): each
case's own input gives its expected value, and more inputs of the same fault class (the README's
"fix the class") give the class's answer. Request-side cases are in
test_cases_anthropic_requests.py.

Wire inputs are read from the case files themselves (their fenced ``text`` blocks), so a test
fails if a case changes under it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from apps.engine.errors import ErrorKind
from apps.engine.events import (
    ChatStreamEvent,
    ContentDelta,
    MessageEnd,
    ToolCallReady,
    ToolCallsRequested,
)
from apps.engine.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from apps.engine.providers.anthropic import classify_anthropic_error
from tests.conftest import FIXTURES
from tests.unit.engine.anthropic_cases import (
    START,
    TEXT_0,
    assemble,
    case_json,
    case_text,
    finish,
    frame,
    request,
    translate,
)

# -- 010 anthropic-ping-event (SSE-NONDATA) --------------------------------------------------


@pytest.mark.parametrize("chunk_size", [None, 1, 7])
def test_010_pings_produce_nothing_and_the_answer_is_intact(chunk_size: int | None) -> None:
    events, error = translate(case_text("010"), chunk_size)
    assert error is None
    assert [e for e in events if isinstance(e, ContentDelta)] == [
        ContentDelta("Hello", 0), ContentDelta("!", 0)]
    end = events[-1]
    assert isinstance(end, MessageEnd)
    assert (end.stop_reason, end.usage.output_tokens) == ("end_turn", 3)
    assert assemble(events).text() == "Hello!"


PING = 'event: ping\ndata: {"type": "ping"}\n\n'


@pytest.mark.parametrize("noise", [
    PING,
    ": keep-alive comment\n\n",
    "event: ping\ndata:\n\n",  # empty data
    'data: {"type": "ping"}\n\n',  # ping without an event line
    "retry: 1000\n\n",
    'event: future_heartbeat\ndata: {"type": "future_heartbeat", "seq": 1}\n\n',
])
def test_010_class_keepalives_anywhere_change_nothing(noise: str) -> None:
    clean = START + TEXT_0 + finish()
    noisy = noise + START + noise + TEXT_0.replace("\n\n", "\n\n" + noise, 2) + noise + finish()
    assert translate(noisy) == translate(clean)


def test_010_class_a_non_json_payload_that_is_not_a_keepalive_fails_loudly() -> None:
    _, error = translate(START + "event: content_block_delta\ndata: garbage\n\n" + TEXT_0
                         + finish())
    assert error is not None and error.kind is ErrorKind.SERVER


# -- 011 anthropic-midstream-overloaded-error (STREAM-ERROR) ---------------------------------


def test_011_midstream_overloaded_error_ends_the_stream_with_an_overloaded_error() -> None:
    events, error = translate(case_text("011"))
    assert error is not None
    assert (error.kind, error.retryable, error.in_stream) == (ErrorKind.OVERLOADED, True, True)
    assert error.kind == classify_anthropic_error(b"", status=529).kind  # same class as 529
    assert error.message == "Overloaded"
    assert error.raw["error"]["type"] == "overloaded_error"
    assert events[-1] == ContentDelta("Here is the first part of", 0)
    assert not any(isinstance(e, MessageEnd) for e in events)  # never "done" after an error


@pytest.mark.parametrize(("error_type", "message", "kind"), [
    ("overloaded_error", "Overloaded", ErrorKind.OVERLOADED),
    ("api_error", "Internal server error", ErrorKind.SERVER),
    ("rate_limit_error", "Rate limited", ErrorKind.RATE_LIMITED),
    ("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum",
     ErrorKind.CONTEXT_LENGTH_EXCEEDED),
    ("permission_error", "no", ErrorKind.PERMISSION),
])
@pytest.mark.parametrize("position", ["first", "after_text", "after_tool_call", "mid_tool_call"])
def test_011_class_an_error_anywhere_is_classified_from_the_body_and_nothing_completes(
        error_type: str, message: str, kind: ErrorKind, position: str) -> None:
    tool_start = frame("content_block_start", {"type": "content_block_start", "index": 1,
                                               "content_block": {"type": "tool_use", "id": "t",
                                                                 "name": "Bash", "input": {}}})
    tool_piece = frame("content_block_delta", {"type": "content_block_delta", "index": 1,
                                               "delta": {"type": "input_json_delta",
                                                         "partial_json": '{"cmd": "ls"}'}})
    tool_stop = frame("content_block_stop", {"type": "content_block_stop", "index": 1})
    before = {"first": "", "after_text": START + TEXT_0,
              "after_tool_call": START + TEXT_0 + tool_start + tool_piece + tool_stop,
              "mid_tool_call": START + TEXT_0 + tool_start + tool_piece}[position]
    error_frame = frame("error", {"type": "error", "error": {"type": error_type,
                                                             "message": message}})
    events, error = translate(before + error_frame + finish())
    assert error is not None and (error.kind, error.message) == (kind, message)
    assert not any(isinstance(e, MessageEnd | ToolCallsRequested) for e in events)
    if position == "mid_tool_call":
        assert not any(isinstance(e, ToolCallReady) for e in events)  # partial call discarded


# -- 015 anthropic-eof-without-message-stop (STREAM-TERMINATION) -----------------------------


def test_015_eof_mid_tool_input_is_an_incomplete_stream_and_the_tool_never_runs() -> None:
    events, error = translate(case_text("015"))
    assert error is not None
    assert (error.kind, error.retryable) == (ErrorKind.STREAM_INTERRUPTED, True)
    assert not any(isinstance(e, ToolCallReady | ToolCallsRequested | MessageEnd)
                   for e in events)


@pytest.mark.parametrize("fixture", ["thinking-tool-use.sse", "parallel-tool-use.sse"])
def test_015_class_a_cut_at_any_byte_completes_only_after_the_stop_reason(fixture: str) -> None:
    """Cut a real recording after every byte: before message_delta's stop_reason is complete
    the result is ``stream_interrupted``; after it, the same answer as the whole stream.
    A tool call is only ever ready with its complete arguments."""
    body = (FIXTURES / "anthropic" / fixture).read_bytes()
    whole, _ = translate(body)
    calls = {e.call.provider_id: e.call.arguments for e in whole if isinstance(e, ToolCallReady)}
    stop_reason_end = body.index(b"\n", body.index(b'"type":"message_delta"'))
    for cut in range(len(body)):
        events, error = translate(body[:cut])
        if cut >= stop_reason_end:
            assert error is None and isinstance(events[-1], MessageEnd), cut
            assert events[-1] == whole[-1], cut
        else:
            assert error is not None and error.kind is ErrorKind.STREAM_INTERRUPTED, cut
            assert not any(isinstance(e, MessageEnd) for e in events), cut
        for event in events:
            if isinstance(event, ToolCallReady):
                assert calls[event.call.provider_id] == event.call.arguments, cut


# -- 026 anthropic-empty-input-json-delta (TOOLCALL-ARGS) ------------------------------------


def _case_026(with_delta: bool) -> str:
    block = case_text("026")
    if not with_delta:
        block = re.sub(r"event: content_block_delta\n.*?\n\n", "", block, flags=re.S)
    return START + TEXT_0 + block + finish("tool_use")


@pytest.mark.parametrize("with_delta", [True, False], ids=["empty-partial-json", "no-delta"])
def test_026_a_tool_without_parameters_gets_an_empty_object(with_delta: bool) -> None:
    events, error = translate(_case_026(with_delta))
    assert error is None
    ready = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [(c.provider_id, c.name, c.arguments) for c in ready] == [
        ("toolu_01XXXX", "getCurrentTime", {})]
    history = [Message(role="user", content="time?"), assemble(events),
               Message(role="tool", content=[ToolResultBlock(tool_use_id="toolu_01XXXX",
                                                             content="12:00")])]
    assert request(history)["messages"][1]["content"][1] == {
        "type": "tool_use", "id": "toolu_01XXXX", "name": "getCurrentTime", "input": {}}


@pytest.mark.parametrize(("start_input", "pieces", "expected"), [
    ({}, [" "], {}),
    ({}, ["\n", "  "], {}),
    ({"tz": "UTC"}, [], {"tz": "UTC"}),  # a complete input in content_block_start (Bedrock)
    ({"tz": "UTC"}, [""], {"tz": "UTC"}),
    ({}, ['{"tz": ', '"CET"}  '], {"tz": "CET"}),  # trailing padding parses normally
    ({"tz": "UTC"}, ['{"tz": "CET"}'], {"tz": "CET"}),  # the deltas win when there are any
])
def test_026_class_argument_normalisation(start_input: dict[str, Any], pieces: list[str],
                                          expected: dict[str, Any]) -> None:
    body = START + frame("content_block_start", {
        "type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "t", "name": "now", "input": start_input}})
    for piece in pieces:
        body += frame("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": piece}})
    body += frame("content_block_stop", {"type": "content_block_stop", "index": 0})
    events, error = translate(body + finish("tool_use"))
    assert error is None
    assert [e.call.arguments for e in events if isinstance(e, ToolCallReady)] == [expected]


@pytest.mark.parametrize("text", ['{"tz": "UTC"', "tz=UTC", "[]", "0"])
def test_026_class_unparseable_arguments_are_reported_never_an_empty_object(text: str) -> None:
    body = START + frame("content_block_start", {
        "type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "t", "name": "now", "input": {}}})
    body += frame("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "input_json_delta",
                                                    "partial_json": text}})
    body += frame("content_block_stop", {"type": "content_block_stop", "index": 0})
    events, error = translate(body + finish("tool_use"))
    assert error is None
    [ready] = [e for e in events if isinstance(e, ToolCallReady)]
    assert ready.call.arguments == {} and ready.call.arguments_error is not None


# -- 032 anthropic-signature-delta-dropped (REASONING-ROUNDTRIP) -----------------------------


def _next_request_after_tools(events: list[ChatStreamEvent]) -> list[dict[str, Any]]:
    answer = assemble(events)
    results = [ToolResultBlock(tool_use_id=c.id, name=c.name, content="ok")
               for c in answer.tool_calls()]
    return request([Message(role="user", content="go"), answer,
                    Message(role="tool", content=results)])["messages"]


@pytest.mark.parametrize("chunk_size", [None, 1, 13])
def test_032_the_thinking_block_goes_back_with_its_signature(chunk_size: int | None) -> None:
    events, error = translate(case_text("032"), chunk_size)
    assert error is None
    messages = _next_request_after_tools(events)
    assert messages[1] == case_json("032")
    assert messages[2]["content"][0]["type"] == "tool_result"
    assert messages[2]["content"][0]["tool_use_id"] == "toolu_01XXXX"


def _thinking(index: int, text: str, signature_pieces: list[str]) -> str:
    body = frame("content_block_start", {"type": "content_block_start", "index": index,
                                         "content_block": {"type": "thinking", "thinking": ""}})
    if text:
        body += frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "thinking_delta",
                                                        "thinking": text}})
    for piece in signature_pieces:
        body += frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "signature_delta",
                                                        "signature": piece}})
    return body + frame("content_block_stop", {"type": "content_block_stop", "index": index})


def test_032_class_interleaved_thinking_blocks_keep_their_own_signatures_in_place() -> None:
    tool = (frame("content_block_start", {"type": "content_block_start", "index": 1,
                                          "content_block": {"type": "tool_use", "id": "toolu_1",
                                                            "name": "ls", "input": {}}})
            + frame("content_block_stop", {"type": "content_block_stop", "index": 1}))
    body = (START + _thinking(0, "first", ["SIG", "_A"]) + tool
            + _thinking(2, "", ["SIG_B"])  # display omitted: empty text, signature only
            + _thinking(3, "unsigned", []) + finish("tool_use"))
    events, error = translate(body)
    assert error is None
    assert _next_request_after_tools(events)[1]["content"] == [
        {"type": "thinking", "thinking": "first", "signature": "SIG_A"},
        {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}},
        {"type": "thinking", "thinking": "", "signature": "SIG_B"},
    ]


# -- 034 anthropic-redacted-thinking-dropped (REASONING-ROUNDTRIP) ---------------------------


@pytest.mark.parametrize("chunk_size", [None, 1, 29])
def test_034_redacted_thinking_is_stored_and_sent_back_in_place(chunk_size: int | None) -> None:
    events, error = translate(case_text("034"), chunk_size)
    assert error is None
    answer = assemble(events)
    assert answer.text() == "Let me check."  # never shown as text
    assert _next_request_after_tools(events)[1] == case_json("034")


def test_034_class_every_opaque_block_keeps_its_position_and_bytes() -> None:
    history = [
        Message(role="user", content="go"),
        Message(role="assistant", provider="anthropic", content=[
            ThinkingBlock(thinking="a", signature="S1"), RedactedThinkingBlock(data="R1"),
            RedactedThinkingBlock(data="R2+/="), ThinkingBlock(thinking="b", signature="S2"),
            ToolUseBlock(id="t1", name="read", input={})]),
        Message(role="tool", content=[ToolResultBlock(tool_use_id="t1", content="x")]),
    ]
    assert request(history)["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "a", "signature": "S1"},
        {"type": "redacted_thinking", "data": "R1"},
        {"type": "redacted_thinking", "data": "R2+/="},
        {"type": "thinking", "thinking": "b", "signature": "S2"},
        {"type": "tool_use", "id": "t1", "name": "read", "input": {}}]


def test_034_class_opaque_blocks_are_dropped_for_a_message_of_another_provider() -> None:
    history = [Message(role="user", content="go"),
               Message(role="assistant", provider="openai", content=[
                   RedactedThinkingBlock(data="R1"), TextBlock(text="hello")]),
               Message(role="user", content="next")]
    assert request(history)["messages"][1]["content"] == [{"type": "text", "text": "hello"}]


# -- 061 anthropic-citations-delta-without-text (CHUNK-SHAPE) --------------------------------


def test_061_a_citations_delta_without_text_lands_on_its_text_block() -> None:
    events, error = translate(START + case_text("061") + finish())
    assert error is None
    answer = assemble(events)
    block = answer.content[0]
    assert isinstance(block, TextBlock)
    citation = {"type": "web_search_result_location",
                "cited_text": "Python 3.14.0 was released on",
                "url": "https://www.python.org/downloads/", "title": "python.org",
                "encrypted_index": "ENC_PLACEHOLDER"}
    assert (block.text, block.citations) == ("The latest release is Python 3.14.", [citation])
    sent = request([Message(role="user", content="latest python?"), answer,
                    Message(role="user", content="thanks")])["messages"][1]["content"]
    assert sent == [{"type": "text", "text": "The latest release is Python 3.14.",
                     "citations": [citation]}]


@pytest.mark.parametrize("order", ["citation-first", "text-first", "interleaved"])
def test_061_class_deltas_are_dispatched_on_their_type_in_any_order(order: str) -> None:
    def cite(n: int) -> str:
        return frame("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "citations_delta", "citation": {
                                                 "type": "char_location", "cited_text": f"c{n}",
                                                 "document_index": 0}}})

    def text(value: str) -> str:
        return frame("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": value}})

    middle = {"citation-first": cite(1) + cite(2) + text("A") + text("B"),
              "text-first": text("A") + text("B") + cite(1) + cite(2),
              "interleaved": text("A") + cite(1) + text("B") + cite(2)}[order]
    body = (START + frame("content_block_start", {"type": "content_block_start", "index": 0,
                                                  "content_block": {"type": "text", "text": "",
                                                                    "citations": None}})
            + middle + frame("content_block_stop", {"type": "content_block_stop", "index": 0})
            + finish())
    events, error = translate(body)
    assert error is None
    answer = assemble(events)
    assert len(answer.content) == 1
    assert answer.text() == "AB"
    assert [c["cited_text"] for c in answer.content[0].citations] == ["c1", "c2"]
