"""shared/cases/provider, Anthropic request-side cases: history shape (040, 041) and error
classification (054, 059); each case's own input gives its expected value, and more inputs of
the same fault class give the class's answer."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import Retrying
from apps.engine.messages import (
    ChatRequest,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from apps.engine.providers.anthropic import AnthropicProvider, classify_anthropic_error
from apps.engine.providers.base import ProviderSettings
from apps.engine.providers.retry import RetryingProvider
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

# -- 040 anthropic-role-alternation (HISTORY-SHAPE) ------------------------------------------


def _from_openai_style(items: list[dict[str, Any]]) -> list[Message]:
    """The case's OpenAI-style history in our message model."""
    messages: list[Message] = []
    for item in items:
        if item["role"] == "tool":
            messages.append(Message(role="tool", content=[ToolResultBlock(
                tool_use_id=item["tool_call_id"], content=item["content"])]))
            continue
        blocks: list[Any] = [TextBlock(text=item["content"])]
        for call in item.get("tool_calls", []):
            blocks.append(ToolUseBlock(id=call["id"], name=call["function"]["name"],
                                       input=json.loads(call["function"]["arguments"])))
        messages.append(Message(role=item["role"], content=blocks))
    return messages


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def test_040_consecutive_user_messages_merge_into_one_turn() -> None:
    body = request(_from_openai_style(case_json("040", 0)))
    assert "system" not in body
    assert body["messages"] == [
        {"role": "user", "content": [_text("say hello")]},
        {"role": "assistant", "content": [_text("Hello there! How can I assist you today?")]},
        {"role": "user", "content": [_text("very nice"), _text("who are you?")]},
    ]


def test_040_variant_system_tool_and_mid_conversation_system_messages() -> None:
    body = request(_from_openai_style(case_json("040", 1)))
    assert body["system"] == "You are the automator."
    assert body["messages"] == [
        {"role": "user", "content": [_text("Do the task.")]},
        {"role": "assistant", "content": [
            _text("Working."),
            {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
            _text("Director: now summarise.")]},
        {"role": "assistant", "content": [_text("Summary: done.")]},
        {"role": "user", "content": [_text("Continue.")]},
    ]


KINDS = st.sampled_from(["user", "assistant", "assistant_call", "tool", "system", "empty",
                         "foreign_reasoning"])


def _message(kind: str, i: int, last_call: str | None) -> Message:
    match kind:
        case "user":
            return Message(role="user", content=f"u{i}")
        case "assistant":
            return Message(role="assistant", provider="anthropic", content=f"a{i}")
        case "assistant_call":
            return Message(role="assistant", provider="anthropic", content=[
                ThinkingBlock(thinking="t", signature=f"S{i}"),
                ToolUseBlock(id=f"c{i}", name="T", input={})])
        case "tool":
            return Message(role="tool", content=[ToolResultBlock(
                tool_use_id=last_call or "ghost", content=f"r{i}")])
        case "system":
            return Message(role="system", content=f"s{i}")
        case "empty":
            return Message(role="user", content="")
        case _:
            return Message(role="assistant", provider="gemini",
                           content=[ThinkingBlock(thinking="g", thought_signature="G")])


@settings(max_examples=300, deadline=None)
@given(st.lists(KINDS, max_size=12))
def test_040_041_class_any_history_serializes_to_a_valid_anthropic_conversation(
        kinds: list[str]) -> None:
    history: list[Message] = []
    last_call: str | None = None
    for i, kind in enumerate(kinds):
        history.append(_message(kind, i, last_call))
        last_call = f"c{i}" if kind == "assistant_call" else last_call
    messages = request(history)["messages"]
    roles = [m["role"] for m in messages]
    assert roles[0] == "user" and roles[-1] == "user"
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))
    for i, message in enumerate(messages):
        assert message["content"], "no empty turn"
        assert all(b.get("text", "x").strip() for b in message["content"])
        calls = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        answered = [b["tool_use_id"] for b in messages[i + 1]["content"]
                    if b["type"] == "tool_result"] if calls else []
        assert answered == calls  # one result per call, in order
        if calls:
            heads = [b["type"] for b in messages[i + 1]["content"][:len(calls)]]
            assert heads == ["tool_result"] * len(calls)  # first and contiguous
        if message["role"] == "user" and (i == 0 or not any(
                b["type"] == "tool_use" for b in messages[i - 1]["content"])):
            assert not any(b["type"] == "tool_result" for b in message["content"])


# -- 041 anthropic-tool-result-first-in-user-turn (HISTORY-SHAPE) ----------------------------

SCREENSHOTS = Message(role="assistant", provider="anthropic", content=[
    TextBlock(text="Taking two screenshots."),
    ToolUseBlock(id="toolu_A", name="screenshot", input={"page": 1}),
    ToolUseBlock(id="toolu_B", name="screenshot", input={"page": 2})])
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw0KGgo_PLACEHOLDER"}}


def _result(call_id: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


def test_041_tool_results_come_first_and_contiguous_then_the_image() -> None:
    faulty = case_json("041", 1)["content"]  # the user turn the faulty client built
    assert [b["type"] for b in faulty] == ["tool_result", "image", "tool_result"]
    turn = Message(role="user", content=[
        ToolResultBlock(tool_use_id="toolu_A", content="captured page 1"),
        ImageBlock(media_type="image/png", data="iVBORw0KGgo_PLACEHOLDER"),
        ToolResultBlock(tool_use_id="toolu_B", content="captured page 2")])
    messages = request([Message(role="user", content="shoot"), SCREENSHOTS, turn])["messages"]
    assert messages[2]["content"] == [_result("toolu_A", "captured page 1"),
                                      _result("toolu_B", "captured page 2"), IMAGE]


@pytest.mark.parametrize("answers", [
    [TextBlock(text="note first"), ToolResultBlock(tool_use_id="toolu_B", content="2"),
     ToolResultBlock(tool_use_id="toolu_A", content="1")],
    [ToolResultBlock(tool_use_id="toolu_B", content="2"), TextBlock(text="note first"),
     ToolResultBlock(tool_use_id="toolu_A", content="1")],
])
def test_041_class_results_follow_the_call_order_whatever_order_they_were_stored_in(
        answers: list[Any]) -> None:
    messages = request([Message(role="user", content="shoot"), SCREENSHOTS,
                        Message(role="user", content=answers)])["messages"]
    assert messages[2]["content"] == [_result("toolu_A", "1"), _result("toolu_B", "2"),
                                      _text("note first")]


def test_041_class_results_split_over_several_messages_are_gathered() -> None:
    messages = request([
        Message(role="user", content="shoot"), SCREENSHOTS,
        Message(role="tool", content=[ToolResultBlock(tool_use_id="toolu_A", content="1")]),
        Message(role="user", content="meanwhile: hurry"),  # a steer injected between results
        Message(role="tool", content=[ToolResultBlock(tool_use_id="toolu_B", content="2")]),
    ])["messages"]
    assert messages[2]["content"] == [_result("toolu_A", "1"), _result("toolu_B", "2"),
                                      _text("meanwhile: hurry")]


def test_041_class_a_call_that_was_not_executed_gets_an_error_result() -> None:
    messages = request([
        Message(role="user", content="shoot"), SCREENSHOTS,
        Message(role="tool", content=[ToolResultBlock(tool_use_id="toolu_B", content="2")]),
    ])["messages"]
    assert messages[2]["content"] == [
        _result("toolu_A", "This tool call was not executed.", is_error=True),
        _result("toolu_B", "2")]


# -- 054 anthropic-prompt-too-long (ERROR-CLASSIFY) ------------------------------------------


def _http_body(number: str, which: int) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of an HTTP response written in a case's text block."""
    head, _, body = case_text(number, which).partition("\n\n")
    lines = head.splitlines()
    status = int(lines[0].split()[1])
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return status, headers, body.strip().encode()


@pytest.mark.parametrize(("which", "counts"), [(0, (216868, 200000)), (1, (233153, 200000))],
                         ids=["anthropic", "relayed"])
def test_054_prompt_too_long_is_context_length_exceeded_with_counts(
        which: int, counts: tuple[int, int]) -> None:
    status, headers, body = _http_body("054", which)
    error = classify_anthropic_error(body, status=status, headers=headers)
    assert (error.kind, error.status, error.retryable) == (
        ErrorKind.CONTEXT_LENGTH_EXCEEDED, 400, False)
    assert (error.input_tokens, error.limit_tokens) == counts


async def test_054_an_http_error_on_a_streaming_request_is_that_error_not_an_empty_stream() -> None:
    status, headers, body = _http_body("054", 0)
    transport = httpx2.MockTransport(lambda _: httpx2.Response(status, headers=headers,
                                                               content=body))
    provider = AnthropicProvider(ProviderSettings(protocol="anthropic",
                                                  base_url="https://api.anthropic.com"),
                                 transport=transport)
    with pytest.raises(ProviderError) as caught:
        async for _ in provider.stream_chat(ChatRequest(model="m", messages=[
                Message(role="user", content="long")])):
            pass
    assert (caught.value.kind, caught.value.status) == (ErrorKind.CONTEXT_LENGTH_EXCEEDED, 400)
    assert caught.value.raw == json.loads(body)


@pytest.mark.parametrize(("message", "counts"), [
    ("prompt is too long: 1000001 tokens > 1000000 maximum", (1000001, 1000000)),
    ("Prompt is too long", (None, None)),
    ("input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000",
     (None, None)),
])
@pytest.mark.parametrize("where", ["http", "stream"])
def test_054_class_every_anthropic_overflow_wording_is_context_length_exceeded(
        message: str, counts: tuple[int | None, int | None], where: str) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    if where == "http":
        error = classify_anthropic_error(json.dumps(body).encode(), status=400)
    else:
        _, error = translate(START + frame("error", body))
    assert error is not None and error.kind is ErrorKind.CONTEXT_LENGTH_EXCEEDED
    assert (error.input_tokens, error.limit_tokens) == counts


# -- 059 anthropic-overloaded-and-retry-after (ERROR-CLASSIFY) -------------------------------

CASE_059_NOW = datetime(2026, 10, 21, 7, 27, 50, tzinfo=UTC).timestamp()


def test_059_a_rate_limited_with_retry_after_seconds() -> None:
    status, headers, body = _http_body("059", 0)
    error = classify_anthropic_error(body, status=status, headers=headers)
    assert (error.kind, error.retry_after_s, error.retryable) == (
        ErrorKind.RATE_LIMITED, 7.0, True)


def test_059_b_overloaded_529_without_reset_headers_is_retryable() -> None:
    status, headers, body = _http_body("059", 1)
    error = classify_anthropic_error(body, status=status, headers=headers)
    assert (error.kind, error.status, error.retry_after_s, error.retryable) == (
        ErrorKind.OVERLOADED, 529, None, True)
    _, in_stream = translate(START + frame("error", json.loads(body)))
    assert in_stream is not None and in_stream.kind is error.kind  # same class as 011


def test_059_c_retry_after_as_an_http_date() -> None:
    status, headers, body = _http_body("059", 2)
    error = classify_anthropic_error(body, status=status, headers=headers, now=CASE_059_NOW)
    assert (error.kind, error.retry_after_s) == (ErrorKind.RATE_LIMITED, 10.0)


def test_059_d_a_hostile_retry_after_is_parsed_unclamped_for_the_retry_layer() -> None:
    error = classify_anthropic_error(b'{"type":"error","error":{"type":"rate_limit_error",'
                                     b'"message":"x"}}', status=429,
                                     headers={"retry-after": "99999999"})
    assert error.retry_after_s == 99999999.0


@pytest.mark.parametrize(("value", "expected"), [
    ("0", 0.0), ("1.5", 1.5), (" 12 ", 12.0), ("-5", 0.0), ("soon", None), ("", None),
    ("Wed, 21 Oct 2026 07:27:40 GMT", 0.0),  # a date in the past: no wait
    ("Wed, 21 Oct 2026 08:27:50 GMT", 3600.0),
])
def test_059_class_retry_after_forms(value: str, expected: float | None) -> None:
    error = classify_anthropic_error(b"", status=429, headers={"Retry-After": value},
                                     now=CASE_059_NOW)
    assert error.retry_after_s == expected


def test_059_class_a_429_without_retry_after_falls_back_to_the_reset_headers() -> None:
    headers = {"anthropic-ratelimit-output-tokens-remaining": "0",
               "anthropic-ratelimit-output-tokens-reset": "2026-10-21T07:28:05Z"}
    error = classify_anthropic_error(b"", status=429, headers=headers, now=CASE_059_NOW)
    assert error.retry_after_s == 15.0


async def test_059_the_adapters_errors_drive_the_retry_layer() -> None:
    """End to end: a 529, then a 429 with retry-after 7, then the answer; the waits asked of
    the (injected) sleep are the ladder's first step and the provider's 7 s."""
    _, _, overloaded = _http_body("059", 1)
    status, headers, limited = _http_body("059", 0)
    answers = iter([httpx2.Response(529, content=overloaded),
                    httpx2.Response(status, headers=headers, content=limited),
                    httpx2.Response(200, content=(START + TEXT_0 + finish()).encode())])
    inner = AnthropicProvider(ProviderSettings(protocol="anthropic",
                                               base_url="https://api.anthropic.com"),
                              transport=httpx2.MockTransport(lambda _: next(answers)))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    retrying = RetryingProvider(inner, sleep=sleep, rng=lambda: 0.5)
    events = [e async for e in retrying.stream_chat(ChatRequest(model="m", messages=[
        Message(role="user", content="hi")]))]
    assert [(e.kind, e.delay_s) for e in events if isinstance(e, Retrying)] == [
        ("overloaded", 3.0), ("rate_limited", 7.0)]
    assert waits == [3.0, 7.0]
    assert assemble(events).text() == "Hi."
