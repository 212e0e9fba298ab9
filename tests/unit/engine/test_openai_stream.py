"""The OpenAI-compatible stream translator, rule by rule, from raw SSE bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import (
    Citation,
    ContentDelta,
    MessageEnd,
    MessageStart,
    ReasoningDelta,
    ThinkingSignature,
    ToolCallDelta,
    ToolCallReady,
    ToolCallsRequested,
    ToolCallStart,
)
from apps.engine.messages import Usage
from apps.engine.providers.openai_stream import OpenAITranslator, normalize_usage
from apps.engine.providers.sse import iter_sse
from apps.engine.replay import replay, replay_events


def sse(*chunks: Any, done: bool = True) -> bytes:
    """An SSE body: dicts become ``data: <json>`` events, strings are written verbatim."""
    lines = [c if isinstance(c, str) else f"data: {json.dumps(c)}\n\n" for c in chunks]
    return ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()


def events_of(body: bytes) -> list[Any]:
    events, error = replay_events("openai", [body])
    assert error is None, error
    return events


def error_of(body: bytes) -> tuple[list[Any], ProviderError]:
    events, error = replay_events("openai", [body])
    assert error is not None, "expected the stream to fail"
    return events, error


def delta(index: int = 0, finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"id": "c1", "model": "m", "choices": [
        {"index": index, "delta": fields, "finish_reason": finish}]}


def call(index: int | None = None, call_id: str | None = None, name: str | None = None,
         arguments: Any = None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function", "function": {}}
    if index is not None:
        item["index"] = index
    if call_id is not None:
        item["id"] = call_id
    if name is not None:
        item["function"]["name"] = name
    if arguments is not None:
        item["function"]["arguments"] = arguments
    return item


def tool_chunk(*calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return delta(finish=finish, tool_calls=list(calls))


FINISH = delta(finish="tool_calls")


def ready_calls(events: list[Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    return [(e.call.provider_id, e.call.name, e.call.arguments)
            for e in events if isinstance(e, ToolCallReady)]


# -- message framing --------------------------------------------------------------------------


def test_message_start_comes_first_with_the_response_id_and_model() -> None:
    events = events_of(sse(delta(content="Hi"), delta(finish="stop")))
    assert events[0] == MessageStart(id="c1", model="m")
    assert events[1] == ContentDelta(text="Hi")
    assert events[-1] == MessageEnd(usage=Usage(), stop_reason="stop")


def test_id_and_model_come_from_the_first_chunk_that_has_them() -> None:
    azure_first = {"id": "", "model": "", "choices": [], "prompt_filter_results": [{}]}
    events = events_of(sse(azure_first, delta(content="Hi"), delta(finish="stop")))
    assert [e for e in events if isinstance(e, MessageStart)] == [MessageStart(id="c1",
                                                                               model="m")]


def test_a_stream_without_ids_still_starts_with_message_start() -> None:
    events = events_of(sse({"choices": [{"index": 0, "delta": {"content": "x"},
                                         "finish_reason": "stop"}]}))
    assert events[0] == MessageStart(id=None, model=None)


def test_nothing_after_done_is_read() -> None:
    body = sse(delta(content="a"), delta(finish="stop")) + sse(delta(content="late"))
    assert replay("openai", [body])["text"] == "a"


def test_end_of_stream_after_finish_reason_is_a_normal_end() -> None:
    usage_chunk = {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
    events = events_of(sse(delta(content="a"), delta(finish="stop"), usage_chunk, done=False))
    assert events[-1] == MessageEnd(usage=Usage(input_tokens=5, output_tokens=1),
                                    stop_reason="stop")


@pytest.mark.parametrize("body", [b"", sse(delta(content="cut"), done=False)],
                         ids=["empty", "cut-after-content"])
def test_end_of_stream_before_finish_reason_or_done_is_interrupted(body: bytes) -> None:
    _, error = error_of(body)
    assert error.kind is ErrorKind.STREAM_INTERRUPTED and error.retryable


def test_done_without_any_finish_reason_ends_normally_with_null_stop_reason() -> None:
    events = events_of(sse(delta(content="a")))
    assert events[-1] == MessageEnd(usage=Usage(), stop_reason=None)


def test_the_last_non_null_finish_reason_wins() -> None:
    late_usage = {"choices": [{"index": 0, "delta": {}, "finish_reason": None}],
                  "usage": {"prompt_tokens": 1}}
    assert replay("openai", [sse(delta(finish="length"), late_usage)])["finish_reason"] == \
        "length"


# -- keep-alives and garbage ------------------------------------------------------------------


@pytest.mark.parametrize("noise", [": OPENROUTER PROCESSING\n\n", "data: \n\n",
                                   "data: : keep-alive\n\n", "event: ping\ndata:\n\n"])
def test_keep_alive_payloads_are_ignored(noise: str) -> None:
    body = sse(noise, delta(content="ok"), noise, delta(finish="stop"))
    assert replay("openai", [body])["text"] == "ok"


def test_a_payload_that_is_not_json_fails_loudly() -> None:
    _, error = error_of(sse(delta(content="a"), "data: upstream hiccup\n\n"))
    assert error.kind is ErrorKind.SERVER and "upstream hiccup" in error.message


# -- text, reasoning, citations ---------------------------------------------------------------


def test_reasoning_comes_from_reasoning_content_or_reasoning_once() -> None:
    body = sse(delta(reasoning_content="a"), delta(reasoning="b"),
               delta(reasoning_content="c", reasoning="c"), delta(content="x", finish="stop"))
    got = replay("openai", [body])
    assert (got["reasoning"], got["text"]) == ("abc", "x")


def test_reasoning_details_contribute_signatures_not_text() -> None:
    details = [{"type": "reasoning.text", "text": "t", "signature": "", "index": 0}]
    signed = [{"type": "reasoning.text", "signature": "SIG", "index": 0}]
    events = events_of(sse(delta(reasoning="t", reasoning_details=details),
                           delta(reasoning=None, reasoning_details=signed),
                           delta(finish="stop")))
    assert [e for e in events if isinstance(e, (ReasoningDelta, ThinkingSignature))] == [
        ReasoningDelta(text="t"), ThinkingSignature(signature="SIG")]


def test_mistral_list_content_splits_thinking_and_text_parts() -> None:
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}
    body = sse(delta(content=[thinking, {"type": "text", "text": "4"}]),
               delta(content="!", finish="stop"))
    got = replay("openai", [body])
    assert (got["reasoning"], got["text"]) == ("hmm", "4!")


def test_a_refusal_is_shown_as_the_answer() -> None:
    assert replay("openai", [sse(delta(refusal="I can't."), delta(finish="stop"))])["text"] == \
        "I can't."


def test_perplexity_citations_repeated_per_chunk_are_emitted_once() -> None:
    def chunk(text: str, urls: list[str]) -> dict[str, Any]:
        return {**delta(content=text), "citations": urls}

    events = events_of(sse(chunk("a", ["u1"]), chunk("b", ["u1", "u2"]), delta(finish="stop")))
    assert [e for e in events if isinstance(e, Citation)] == [Citation("u1"), Citation("u2")]


def test_url_citation_annotations_become_citations() -> None:
    note = {"type": "url_citation", "url_citation": {"url": "https://x", "title": "X",
                                                     "start_index": 0, "end_index": 3}}
    got = replay("openai", [sse(delta(content="abc", annotations=[note]),
                                delta(annotations=[note], finish="stop"))])
    assert got["citations"] == [note]


# -- usage ------------------------------------------------------------------------------------


def test_usage_normalization_of_openai_fields() -> None:
    raw = {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14,
           "prompt_tokens_details": {"cached_tokens": 6},
           "completion_tokens_details": {"reasoning_tokens": 3}}
    assert normalize_usage(raw) == Usage(input_tokens=10, output_tokens=4, total_tokens=14,
                                         cached_input_tokens=6, reasoning_tokens=3)


def test_deepseek_cache_hit_tokens_stand_in_for_cached_tokens() -> None:
    assert normalize_usage({"prompt_tokens": 9, "prompt_cache_hit_tokens": 7}) == Usage(
        input_tokens=9, cached_input_tokens=7)


def test_x_groq_usage_is_used_only_when_there_is_no_top_level_usage() -> None:
    groq = {**delta(finish="stop"), "x_groq": {"usage": {"prompt_tokens": 3}}}
    both = {**groq, "usage": {"prompt_tokens": 4}}
    assert replay("openai", [sse(groq)])["usage"]["input_tokens"] == 3
    assert replay("openai", [sse(both)])["usage"]["input_tokens"] == 4


def test_the_last_usage_wins() -> None:
    first = {**delta(content="a"), "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    last = {**delta(finish="stop"), "usage": {"prompt_tokens": 1, "completion_tokens": 9}}
    assert replay("openai", [sse(first, last)])["usage"]["output_tokens"] == 9


# -- tool calls -------------------------------------------------------------------------------


def test_a_call_is_ready_as_soon_as_the_next_index_appears() -> None:
    translator = OpenAITranslator()
    chunks = [tool_chunk(call(0, "a", "one", '{"x":')), tool_chunk(call(0, arguments="1}")),
              tool_chunk(call(1, "b", "two", "{}"))]
    per_chunk = [translator.feed(e) for e in iter_sse([sse(*chunks, done=False)])]
    assert not any(isinstance(e, ToolCallReady) for e in per_chunk[0] + per_chunk[1])
    assert ready_calls(per_chunk[2]) == [("a", "one", {"x": 1})]
    assert isinstance(per_chunk[2][0], ToolCallReady)  # before the next call's first event


def test_finish_reason_completes_every_pending_call_before_done() -> None:
    translator = OpenAITranslator()
    body = sse(tool_chunk(call(0, "a", "one", "{}"), call(1, "b", "two", "{}")), FINISH,
               done=False)
    per_chunk = [translator.feed(e) for e in iter_sse([body])]
    assert ready_calls(per_chunk[1]) == [("b", "two", {})]
    assert ready_calls(per_chunk[0]) == [("a", "one", {})]


def test_tool_calls_requested_follows_the_last_ready_once_before_message_end() -> None:
    events = events_of(sse(tool_chunk(call(0, "a", "one", "{}")),
                           tool_chunk(call(1, "b", "two", "{}")), FINISH))
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("ToolCallsRequested") == 1
    assert kinds[-2:] == ["ToolCallsRequested", "MessageEnd"]
    requested = next(e for e in events if isinstance(e, ToolCallsRequested))
    assert [c.name for c in requested.calls] == ["one", "two"]


def test_start_and_deltas_describe_the_call_for_display() -> None:
    events = events_of(sse(tool_chunk(call(0, "a", "Bash", "")),
                           tool_chunk(call(0, arguments='{"c":')),
                           tool_chunk(call(0, arguments='"ls"}')), FINISH))
    shown = [e for e in events if isinstance(e, (ToolCallStart, ToolCallDelta))]
    assert shown == [ToolCallStart(index=0, id="a", name="Bash"),
                     ToolCallDelta(index=0, arguments_delta='{"c":'),
                     ToolCallDelta(index=0, arguments_delta='"ls"}')]


def test_a_call_without_id_gets_one_minted_id_used_everywhere() -> None:
    events = events_of(sse(tool_chunk(call(0, name="f", arguments="{}")), FINISH))
    ready = next(e for e in events if isinstance(e, ToolCallReady))
    requested = next(e for e in events if isinstance(e, ToolCallsRequested))
    assert ready.call.provider_id is None and ready.call.id.startswith("call_")
    assert requested.calls[0].id == ready.call.id


def test_an_id_arriving_after_the_first_delta_is_the_real_id() -> None:
    events = events_of(sse(tool_chunk(call(0, name="f", arguments="{")),
                           tool_chunk(call(0, "late", arguments="}")), FINISH))
    assert ready_calls(events) == [("late", "f", {})]


@pytest.mark.parametrize("later_id", ["", "call_other"])
def test_the_first_id_is_never_overwritten(later_id: str) -> None:
    events = events_of(sse(tool_chunk(call(0, "first", "f", "{")),
                           tool_chunk(call(0, later_id, arguments="}")), FINISH))
    assert ready_calls(events) == [("first", "f", {})]


def test_arguments_sent_as_an_object_are_complete() -> None:
    events = events_of(sse(tool_chunk(call(0, "a", "f", {"x": 1})),
                           tool_chunk(call(0, "a", "f", {"x": 1})), FINISH))
    assert ready_calls(events) == [("a", "f", {"x": 1})]


@pytest.mark.parametrize("text", ["", "   ", "null"])
def test_empty_arguments_are_an_empty_object(text: str) -> None:
    assert ready_calls(events_of(sse(tool_chunk(call(0, "a", "f", text)), FINISH))) == [
        ("a", "f", {})]


@pytest.mark.parametrize("text", ['{"path": "REA', "[1, 2]", "not json"])
def test_arguments_that_are_not_a_json_object_are_reported_not_an_empty_object(
    text: str,
) -> None:
    events = events_of(sse(tool_chunk(call(0, "a", "f", text)), FINISH))
    [ready] = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert ready.arguments == {} and ready.arguments_error is not None


def test_a_call_continued_after_it_was_complete_is_an_error() -> None:
    _, error = error_of(sse(tool_chunk(call(0, "a", "f", "{}")), tool_chunk(call(1, "b", "g")),
                            tool_chunk(call(0, arguments="x")), FINISH))
    assert "continued after it was complete" in error.message


def test_a_call_without_a_name_is_an_error() -> None:
    _, error = error_of(sse(tool_chunk(call(0, "a", arguments="{}")), FINISH))
    assert "no function name" in error.message


# -- errors inside the stream -----------------------------------------------------------------


def test_an_sse_error_event_is_classified_from_its_body() -> None:
    body = sse(delta(reasoning="r"), "event: error\ndata: " + json.dumps(
        {"error": {"message": "Rate limit reached", "type": "tokens",
                   "code": "rate_limit_exceeded"}}) + "\n\n", done=False)
    _, error = error_of(body)
    assert (error.kind, error.in_stream, error.status) == (ErrorKind.RATE_LIMITED, True, None)


def test_finish_reason_error_without_an_error_object_is_a_server_error() -> None:
    events, error = error_of(sse(tool_chunk(call(0, "a", "bash", '{"c": "ls')),
                                 {"choices": [{"index": 0, "delta": {},
                                               "finish_reason": "error"}]}))
    assert error.kind is ErrorKind.SERVER and not ready_calls(events)
    assert not any(isinstance(e, MessageEnd) for e in events)


def test_an_error_object_on_the_finishing_choice_is_classified() -> None:
    _, error = error_of(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "error",
                                          "error": {"message": "Too many requests",
                                                    "code": 429}}]}))
    assert (error.kind, error.message) == (ErrorKind.RATE_LIMITED, "Too many requests")


def test_resending_id_and_name_after_completion_changes_nothing() -> None:
    events = events_of(sse(tool_chunk(call(0, "a", "f", "{}")), tool_chunk(call(1, "b", "g")),
                           tool_chunk(call(0, "a", "f", "")), FINISH))
    assert ready_calls(events) == [("a", "f", {}), ("b", "g", {})]
