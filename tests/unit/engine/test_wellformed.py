"""A provider field of the wrong JSON type ends the stream with a classified ProviderError
(kind ``server``, in_stream), through the real HTTP path of each adapter; it never escapes as a
TypeError or a pydantic ValidationError from the assembler or the store (found by the chaos
suite's adapter fuzz, tests/chaos/test_adapter_fuzz.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ContentDelta
from apps.engine.messages import ChatRequest, Message
from apps.engine.providers import provider_class
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.base import ProviderSettings
from apps.engine.providers.wellformed import translated

REQUEST = ChatRequest(model="m", messages=[Message(role="user", content="hi")])
BASE = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1",
        "gemini": "https://generativelanguage.googleapis.com"}


def sse(*events: tuple[str | None, dict[str, Any]]) -> bytes:
    out = b""
    for name, data in events:
        if name:
            out += f"event: {name}\n".encode()
        out += b"data: " + json.dumps(data).encode() + b"\n\n"
    return out


def anthropic_text(text: Any) -> bytes:
    return sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_1", "model": "c"}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ("message_stop", {"type": "message_stop"}))


def gemini_model(model: Any) -> bytes:
    return sse((None, {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]},
                                       "finishReason": "STOP"}], "modelVersion": model}))


def anthropic_stop_reason(reason: Any) -> bytes:
    return sse(
        ("message_start", {"type": "message_start", "message": {"id": "msg_1"}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason}}),
        ("message_stop", {"type": "message_stop"}))


def anthropic_usage(tokens: Any) -> bytes:
    return sse(
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "usage": {"input_tokens": tokens}}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        ("message_stop", {"type": "message_stop"}))


async def assembled(protocol: str, body: bytes) -> Message:
    """The message the runtime would store from ``body`` (raises what stream_chat raises)."""
    transport = httpx2.MockTransport(lambda _request: httpx2.Response(
        200, content=body, headers={"content-type": "text/event-stream"}))
    settings = ProviderSettings(protocol=protocol, base_url=BASE[protocol], api_key="k")
    assembler = MessageAssembler(protocol)  # type: ignore[arg-type]
    async with provider_class(protocol)(settings, transport=transport) as provider:
        async for event in provider.stream_chat(REQUEST):
            assembler.feed(event)
    return assembler.message()


@pytest.mark.parametrize(("protocol", "body", "field"), [
    ("anthropic", anthropic_text({"not": "text"}), "ContentDelta.text is dict"),
    ("anthropic", anthropic_text(-1), "ContentDelta.text is int"),
    ("gemini", gemini_model(10**20), "MessageStart.model is int"),
    ("anthropic", anthropic_stop_reason(7), "MessageEnd.stop_reason is int"),
    ("anthropic", anthropic_usage("many"), "ValidationError"),
], ids=["anthropic-text-object", "anthropic-text-number", "gemini-model-number",
        "anthropic-stop-reason-number", "anthropic-usage-string"])
def test_a_field_of_the_wrong_type_is_a_classified_server_error(
        protocol: str, body: bytes, field: str) -> None:
    with pytest.raises(ProviderError) as caught:
        asyncio.run(assembled(protocol, body))
    error = caught.value
    assert (error.kind, error.in_stream, error.provider) == (ErrorKind.SERVER, True, protocol)
    assert "does not follow the protocol" in error.message and field in error.message


def test_well_typed_streams_pass_unchanged() -> None:
    message = asyncio.run(assembled("anthropic", anthropic_text("Hello")))
    assert message.content[0].text == "Hello"
    assert asyncio.run(assembled("gemini", gemini_model("gemini-2.5"))).model == "gemini-2.5"


def test_a_translator_error_of_its_own_passes_through() -> None:
    own = ProviderError(ErrorKind.RATE_LIMITED, "slow down", provider="openai", in_stream=True)

    def step() -> list[Any]:
        raise own

    with pytest.raises(ProviderError) as caught:
        translated("openai", step)
    assert caught.value is own
    assert translated("openai", lambda: [ContentDelta("a", 0)]) == [ContentDelta("a", 0)]
