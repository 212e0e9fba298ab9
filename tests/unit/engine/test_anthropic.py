"""Anthropic adapter: stream translation and error classification (request mapping is in
test_anthropic_request.py, the HTTP path in test_anthropic_http.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import (
    ChatStreamEvent,
    Citation,
    ContentDelta,
    MessageEnd,
    MessageStart,
    ReasoningDelta,
    RedactedThinking,
    ServerToolBlockEvent,
    ThinkingSignature,
    ToolCallDelta,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
from apps.engine.messages import Usage
from apps.engine.providers.anthropic import AnthropicTranslator, classify_anthropic_error
from apps.engine.providers.sse import SSEEvent, iter_sse
from apps.engine.replay import chunked, replay_events
from tests.conftest import FIXTURES
from tests.unit.engine.anthropic_sse import (
    block_start,
    block_stop,
    delta,
    end,
    error_body,
    frame,
    start,
    stop,
    text_block,
    tool_block,
)


def translate(body: bytes, chunk_size: int | None = None
              ) -> tuple[list[ChatStreamEvent], ProviderError | None]:
    return replay_events("anthropic", chunked(body, chunk_size))


def complete(body: bytes) -> list[ChatStreamEvent]:
    events, error = translate(body)
    assert error is None, error
    return events


def feed_each(body: bytes) -> list[list[ChatStreamEvent]]:
    """What each SSE event of ``body`` yields, one list per event, in order."""
    translator = AnthropicTranslator()
    return [translator.feed(event) for event in iter_sse([body])]


# -- translation -----------------------------------------------------------------------------


def test_text_stream_yields_start_deltas_and_end_with_final_usage() -> None:
    events = complete(start() + text_block(0, "Hel", "lo") + end(usage={"output_tokens": 7}))
    assert events == [
        MessageStart(id="msg_1", model="claude-sonnet-5"),
        ContentDelta("Hel", 0), ContentDelta("lo", 0),
        MessageEnd(usage=Usage(input_tokens=10, output_tokens=7), stop_reason="end_turn"),
    ]


def test_usage_from_message_delta_is_laid_over_message_start_and_nulls_change_nothing() -> None:
    body = start({"input_tokens": 5, "cache_read_input_tokens": 100,
                  "cache_creation_input_tokens": 3, "output_tokens": 1}) + end(usage={
                      "input_tokens": None, "output_tokens": 40,
                      "output_tokens_details": {"thinking_tokens": 12}})
    assert complete(body)[-1].usage == Usage(
        input_tokens=5, output_tokens=40, cached_input_tokens=100,
        cache_creation_input_tokens=3, reasoning_tokens=12)


def test_reasoning_tokens_stay_unknown_when_not_reported() -> None:
    assert complete(start() + end())[-1].usage.reasoning_tokens is None


def test_each_thinking_block_gets_its_own_concatenated_signature_at_its_stop() -> None:
    def thinking(index: int, text: str, *signature: str) -> bytes:
        body = block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
        body += delta(index, {"type": "thinking_delta", "thinking": text})
        body += b"".join(delta(index, {"type": "signature_delta", "signature": s})
                         for s in signature)
        return body + block_stop(index)

    body = start() + thinking(0, "one", "AB", "CD") + thinking(1, "two", "EF") + end()
    per_event = feed_each(body)
    assert per_event[5] == [ThinkingSignature("ABCD")]  # at block 0's content_block_stop
    events = complete(body)
    assert [e for e in events if isinstance(e, ThinkingSignature | ReasoningDelta)] == [
        ReasoningDelta("one", 0), ThinkingSignature("ABCD"),
        ReasoningDelta("two", 1), ThinkingSignature("EF")]


def test_redacted_thinking_is_surfaced_with_its_data() -> None:
    body = start() + block_start(0, {"type": "redacted_thinking", "data": "OPAQUE"})
    body += block_stop(0) + end()
    assert RedactedThinking("OPAQUE") in complete(body)


def test_tool_call_is_ready_the_moment_its_block_stops() -> None:
    body = (start() + tool_block(0, "toolu_1", "Read", '{"pa', 'th": "a"}')
            + tool_block(1, "toolu_2", "Read", '{"path": "b"}') + end("tool_use"))
    per_event = feed_each(body)
    call = per_event[4][0].call  # content_block_stop of block 0, before block 1 starts
    assert per_event[4] == [ToolCallReady(call)]
    assert (call.id, call.provider_id, call.name, call.arguments, call.index) == (
        "toolu_1", "toolu_1", "Read", {"path": "a"}, 0)
    assert per_event[1] == [ToolCallStart(0, "toolu_1", "Read")]
    assert per_event[2:4] == [[ToolCallDelta(0, '{"pa')], [ToolCallDelta(0, 'th": "a"}')]]


def test_tool_calls_requested_comes_once_after_the_last_ready_and_before_the_end() -> None:
    body = (start() + text_block(0, "Two calls.") + tool_block(1, "t1", "A", "{}")
            + tool_block(2, "t2", "B", "") + end("tool_use"))
    events = complete(body)
    ready = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert isinstance(events[-2], ToolCallsRequested) and events[-2].calls == ready
    assert isinstance(events[-1], MessageEnd) and events[-1].stop_reason == "tool_use"
    assert sum(isinstance(e, ToolCallsRequested) for e in events) == 1


def test_no_tool_calls_requested_without_calls() -> None:
    assert not any(isinstance(e, ToolCallsRequested)
                   for e in complete(start() + text_block(0, "hi") + end()))


@pytest.mark.parametrize("pieces", [(), ("",), ("", ""), ("  ",), ("\n", " \t")])
def test_empty_or_blank_tool_input_is_an_empty_object(pieces: tuple[str, ...]) -> None:
    events = complete(start() + tool_block(0, "t", "Now", *pieces) + end("tool_use"))
    assert [e.call.arguments for e in events if isinstance(e, ToolCallReady)] == [{}]


def test_without_deltas_the_input_of_content_block_start_is_used() -> None:
    body = start() + block_start(0, {"type": "tool_use", "id": "t", "name": "Read",
                                     "input": {"path": "given"}}) + block_stop(0) + end()
    assert [e.call.arguments for e in complete(body) if isinstance(e, ToolCallReady)] == [
        {"path": "given"}]


@pytest.mark.parametrize("text", ['{"path": "a"', "not json", "[1, 2]", '"a string"'])
def test_tool_input_that_is_not_a_json_object_is_reported_never_an_empty_object(
        text: str) -> None:
    # The call is never run with guessed arguments: it carries the reason, and the executor
    # answers the model with it (DESIGN 2.5: bad arguments never crash the run).
    events, error = translate(start() + tool_block(0, "t", "Read", text) + end("tool_use"))
    assert error is None
    [ready] = [e for e in events if isinstance(e, ToolCallReady)]
    assert ready.call.arguments == {} and ready.call.arguments_error
    assert repr(text[:20])[1:-1] in ready.call.arguments_error


def test_a_call_without_an_id_gets_a_minted_one_and_no_provider_id() -> None:
    body = start() + block_start(0, {"type": "tool_use", "name": "Now", "input": {}})
    body += block_stop(0) + end("tool_use")
    call = next(e.call for e in complete(body) if isinstance(e, ToolCallReady))
    assert call.provider_id is None and call.id.startswith("call_")


def test_server_tool_blocks_are_surfaced_complete_and_are_not_client_calls() -> None:
    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    outcome = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
               "content": [{"type": "web_search_result", "url": "https://x.test",
                            "title": "X", "encrypted_content": "ENC"}]}
    body = start() + block_start(0, use)
    body += delta(0, {"type": "input_json_delta", "partial_json": '{"query": '})
    body += delta(0, {"type": "input_json_delta", "partial_json": '"q"}'})
    body += block_stop(0) + block_start(1, outcome) + block_stop(1) + end()
    events = complete(body)
    assert [e for e in events if isinstance(e, ServerToolBlockEvent)] == [
        ServerToolBlockEvent({**use, "input": {"query": "q"}}), ServerToolBlockEvent(outcome)]
    assert not any(isinstance(e, ToolCallStart | ToolCallDelta | ToolCallReady) for e in events)


def test_an_unknown_block_type_is_kept_verbatim_as_a_server_block() -> None:
    block = {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False,
             "content": [{"type": "text", "text": "ok"}]}
    events = complete(start() + block_start(0, block) + block_stop(0) + end())
    assert ServerToolBlockEvent(block) in events


def test_citations_deltas_are_surfaced_on_their_text_block() -> None:
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0,
                "document_title": "Doc", "start_char_index": 0, "end_char_index": 1}
    body = start() + block_start(0, {"type": "text", "text": "", "citations": []})
    body += delta(0, {"type": "citations_delta", "citation": citation})
    body += delta(0, {"type": "text_delta", "text": "Cited."}) + block_stop(0) + end()
    assert complete(body)[1:3] == [Citation(citation, 0), ContentDelta("Cited.", 0)]


def test_text_and_citations_already_in_content_block_start_are_not_lost() -> None:
    citation = {"type": "web_search_result_location", "url": "https://x.test"}
    body = start() + block_start(0, {"type": "text", "text": "Pre", "citations": [citation]})
    body += block_stop(0) + end()
    assert complete(body)[1:3] == [ContentDelta("Pre", 0), Citation(citation, 0)]


def test_unknown_event_and_delta_types_and_pings_are_ignored() -> None:
    body = (start() + frame("ping", {"type": "ping"}) + frame("future_event", {"type": "x"})
            + block_start(0, {"type": "text", "text": ""})
            + delta(0, {"type": "future_delta", "stuff": 1})
            + delta(0, {"type": "text_delta", "text": "ok"}) + block_stop(0) + end())
    assert [type(e) for e in complete(body)] == [MessageStart, ContentDelta, MessageEnd]


@pytest.mark.parametrize("payload", [b"{oops", b"[1, 2]", b"OVERLOADED", b'"text"'])
def test_a_payload_that_is_not_a_json_object_fails_loudly(payload: bytes) -> None:
    body = start() + b"event: content_block_delta\ndata: " + payload + b"\n\n"
    events, error = translate(body + text_block(0, "never shown") + end())
    assert error is not None and error.kind is ErrorKind.SERVER
    assert "not a JSON object" in error.message
    assert events == [MessageStart(id="msg_1", model="claude-sonnet-5")]


def test_a_stream_cut_inside_its_last_event_is_interrupted_not_malformed() -> None:
    body = start() + text_block(0, "hi") + end()
    cut = body[: body.index(b'"stop_reason"') + 8]  # inside message_delta's JSON
    _, error = translate(cut)
    assert error is not None and error.kind is ErrorKind.STREAM_INTERRUPTED
    assert "inside an event" in error.message


def test_a_cut_inside_message_stop_after_the_stop_reason_still_completes_the_turn() -> None:
    body = start() + text_block(0, "hi") + end()
    events = complete(body[:-8])
    assert events[-1] == MessageEnd(usage=Usage(input_tokens=10, output_tokens=5),
                                    stop_reason="end_turn")


def test_an_error_event_raises_the_classified_error_after_the_partial_output() -> None:
    body = start() + block_start(0, {"type": "text", "text": ""})
    body += delta(0, {"type": "text_delta", "text": "partial"})
    body += frame("error", {"type": "error", "error": {"type": "rate_limit_error",
                                                       "message": "slow down"}})
    events, error = translate(body)
    assert events[-1] == ContentDelta("partial", 0)
    assert error is not None
    assert (error.kind, error.message, error.in_stream, error.status) == (
        ErrorKind.RATE_LIMITED, "slow down", True, None)


def test_an_error_event_whose_data_is_not_json_is_still_an_error() -> None:
    events, error = translate(start() + b"event: error\ndata: upstream connect error\n\n")
    assert error is not None and error.kind is ErrorKind.SERVER
    assert error.message == "upstream connect error"


@pytest.mark.parametrize("body", [
    b"",
    start(),
    start() + text_block(0, "cut"),
    start() + block_start(0, {"type": "text", "text": ""}) + delta(0, {
        "type": "text_delta", "text": "mid-block"}),
])
def test_eof_before_the_end_of_the_message_is_an_interrupted_stream(body: bytes) -> None:
    events, error = translate(body)
    assert error is not None and error.kind is ErrorKind.STREAM_INTERRUPTED
    assert error.retryable
    assert not any(isinstance(e, MessageEnd) for e in events)


def test_a_message_delta_with_a_stop_reason_completes_the_turn_without_message_stop() -> None:
    body = start() + text_block(0, "done") + end().removesuffix(stop())
    assert complete(body)[-1] == MessageEnd(usage=Usage(input_tokens=10, output_tokens=5),
                                            stop_reason="end_turn")


def test_message_stop_inside_an_open_tool_use_block_is_an_interrupted_stream() -> None:
    body = start() + block_start(0, {"type": "tool_use", "id": "t", "name": "A", "input": {}})
    body += delta(0, {"type": "input_json_delta", "partial_json": '{"a": '}) + end("tool_use")
    events, error = translate(body)
    assert error is not None and error.kind is ErrorKind.STREAM_INTERRUPTED
    assert not any(isinstance(e, ToolCallReady) for e in events)


def test_the_translator_is_done_at_message_stop_and_ignores_what_follows() -> None:
    translator = AnthropicTranslator()
    for event in iter_sse([start() + end()]):
        translator.feed(event)
    assert translator.done
    assert translator.feed(SSEEvent("content_block_start", json.dumps({
        "type": "content_block_start", "index": 0, "content_block": {"type": "text"}}))) == []
    assert translator.finish() == []


def test_stop_sequence_is_reported() -> None:
    body = start() + text_block(0, "a") + frame("message_delta", {
        "type": "message_delta", "delta": {"stop_reason": "stop_sequence",
                                           "stop_sequence": "###"}, "usage": {}}) + stop()
    assert complete(body)[-1].stop_sequence == "###"


@pytest.mark.parametrize("name", sorted(p.name for p in (FIXTURES / "anthropic").glob("*.sse")))
@pytest.mark.parametrize("chunk_size", [1, 5, 17, 256])
def test_recordings_give_the_same_events_whatever_the_chunking(name: str,
                                                               chunk_size: int) -> None:
    body = (FIXTURES / "anthropic" / name).read_bytes()
    assert translate(body, chunk_size) == translate(body)


# -- error classification --------------------------------------------------------------------

# https://platform.claude.com/docs/en/api/errors: HTTP status and error.type of each error.
ANTHROPIC_ERRORS = [
    (400, "invalid_request_error", "bad field", ErrorKind.INVALID_REQUEST),
    (401, "authentication_error", "invalid x-api-key", ErrorKind.AUTH),
    (402, "billing_error", "credit balance too low", ErrorKind.PERMISSION),
    (403, "permission_error", "no access", ErrorKind.PERMISSION),
    (404, "not_found_error", "model: claude-x", ErrorKind.NOT_FOUND),
    (413, "request_too_large", "Request exceeds the maximum size", ErrorKind.INVALID_REQUEST),
    (429, "rate_limit_error", "rate limited", ErrorKind.RATE_LIMITED),
    (500, "api_error", "Internal server error", ErrorKind.SERVER),
    (504, "timeout_error", "timed out", ErrorKind.SERVER),
    (529, "overloaded_error", "Overloaded", ErrorKind.OVERLOADED),
    (400, "invalid_request_error", "prompt is too long: 216868 tokens > 200000 maximum",
     ErrorKind.CONTEXT_LENGTH_EXCEEDED),
    (400, "invalid_request_error",
     "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000",
     ErrorKind.CONTEXT_LENGTH_EXCEEDED),
]


@pytest.mark.parametrize(("status", "kind", "message", "expected"), ANTHROPIC_ERRORS)
def test_http_errors_are_classified(status: int, kind: str, message: str,
                                    expected: ErrorKind) -> None:
    error = classify_anthropic_error(error_body(kind, message), status=status, headers={})
    assert (error.kind, error.status, error.message, error.in_stream) == (
        expected, status, message, False)
    assert error.raw["error"]["type"] == kind


@pytest.mark.parametrize(("status", "kind", "message", "expected"), ANTHROPIC_ERRORS)
def test_the_same_errors_inside_a_stream_get_the_same_kinds(status: int, kind: str,
                                                            message: str,
                                                            expected: ErrorKind) -> None:
    body = start() + b"event: error\ndata: " + error_body(kind, message) + b"\n\n"
    _, error = translate(body)
    assert error is not None
    assert (error.kind, error.status, error.in_stream) == (expected, None, True)


@pytest.mark.parametrize("status", [401, 403, 404, 429, 500, 502, 503, 529])
def test_an_error_without_a_json_body_is_classified_by_status(status: int) -> None:
    error = classify_anthropic_error(b"<html>Bad Gateway</html>", status=status, headers={})
    assert error.kind is {401: ErrorKind.AUTH, 403: ErrorKind.PERMISSION,
                          404: ErrorKind.NOT_FOUND, 429: ErrorKind.RATE_LIMITED,
                          500: ErrorKind.SERVER, 502: ErrorKind.SERVER,
                          503: ErrorKind.OVERLOADED, 529: ErrorKind.OVERLOADED}[status]


NOW = datetime(2026, 10, 21, 7, 27, 50, tzinfo=UTC).timestamp()


def test_a_429_without_retry_after_waits_for_the_exhausted_limit_to_reset() -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "10",
        "anthropic-ratelimit-requests-reset": "2026-10-21T07:29:50Z",
        "anthropic-ratelimit-input-tokens-remaining": "0",
        "anthropic-ratelimit-input-tokens-reset": "2026-10-21T07:28:20Z",
    }
    error = classify_anthropic_error(error_body("rate_limit_error", "slow"), status=429,
                                     headers=headers, now=NOW)
    assert error.retry_after_s == 30.0


def test_retry_after_wins_over_the_reset_headers() -> None:
    headers = {"retry-after": "4", "anthropic-ratelimit-tokens-remaining": "0",
               "anthropic-ratelimit-tokens-reset": "2026-10-21T08:00:00Z"}
    error = classify_anthropic_error(error_body("rate_limit_error", "slow"), status=429,
                                     headers=headers, now=NOW)
    assert error.retry_after_s == 4.0


def test_unparseable_reset_headers_give_no_wait() -> None:
    headers = {"anthropic-ratelimit-tokens-remaining": "0",
               "anthropic-ratelimit-tokens-reset": "soon"}
    error = classify_anthropic_error(error_body("rate_limit_error", "slow"), status=429,
                                     headers=headers, now=NOW)
    assert error.retry_after_s is None
