"""Anthropic adapter over HTTP, end to end through ``httpx2.MockTransport``: the POST, the
streamed events, HTTP errors, idle timeouts, closing and cancelling, and the model list."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import httpx2
import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ChatStreamEvent, MessageEnd, MessageStart
from apps.engine.messages import ChatRequest, Message
from apps.engine.providers import base
from apps.engine.providers.anthropic import AnthropicProvider, build_body
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.base import ProviderSettings
from apps.engine.replay import chunked
from tests.conftest import FIXTURES
from tests.unit.engine.anthropic_sse import end, error_body, start, text_block

# -- HTTP, end to end through httpx2.MockTransport -------------------------------------------


class Body(httpx2.AsyncByteStream):
    """A response body in pieces; then EOF, a hang (``hang``) or an exception (``fail``)."""

    def __init__(self, *chunks: bytes, hang: bool = False, fail: Exception | None = None):
        self.chunks, self.hang, self.fail = chunks, hang, fail
        self.sent = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.sent += 1
            yield chunk
        if self.fail is not None:
            raise self.fail
        if self.hang:
            await asyncio.Event().wait()  # a server that goes silent and never closes

    async def aclose(self) -> None:
        self.closed = True


Handler = Callable[[httpx2.Request], httpx2.Response]


def provider(handler: Handler, **settings: Any) -> AnthropicProvider:
    config = ProviderSettings(protocol="anthropic", base_url=settings.pop(
        "base_url", "https://api.anthropic.com"), api_key=settings.pop("api_key", "sk-test"),
        **settings)
    return AnthropicProvider(config, transport=httpx2.MockTransport(handler))


def sse_response(body: Body) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=body)


REQUEST = ChatRequest(model="claude-sonnet-5", messages=[Message(role="user", content="hi")])


async def collect(p: AnthropicProvider, request: ChatRequest = REQUEST
                  ) -> list[ChatStreamEvent]:
    return [event async for event in p.stream_chat(request)]


async def test_posts_the_body_to_v1_messages_with_the_anthropic_headers() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return sse_response(Body(start() + text_block(0, "hi") + end()))

    p = provider(handler, read_timeout_s=42.0, headers=(("anthropic-beta", "x-2026-01-01"),))
    await collect(p)
    request = seen[0]
    assert (request.method, str(request.url)) == ("POST", "https://api.anthropic.com/v1/messages")
    assert request.headers["x-api-key"] == "sk-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["anthropic-beta"] == "x-2026-01-01"
    assert "authorization" not in request.headers
    assert json.loads(request.content) == build_body(REQUEST)
    assert request.extensions["timeout"]["read"] == 42.0  # the idle-read limit is explicit
    await p.aclose()


async def test_a_gateway_base_url_keeps_its_path() -> None:
    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        return sse_response(Body(start() + end()))

    await collect(provider(handler, base_url="https://gw.example/anthropic/"))
    assert seen == ["https://gw.example/anthropic/v1/messages"]


async def test_streamed_events_come_out_and_rebuild_the_message() -> None:
    recording = (FIXTURES / "anthropic" / "thinking-tool-use.sse").read_bytes()
    pieces = list(chunked(recording, 97))
    events = await collect(provider(lambda _: sse_response(Body(*pieces))))
    assembler = MessageAssembler("anthropic")
    for event in events:
        assembler.feed(event)
    message = assembler.message()
    assert [b.type for b in message.content] == ["thinking", "tool_use"]
    assert message.content[0].signature.startswith("EoQDCm0I")
    assert message.tool_calls()[0].id == "toolu_01825dXWLSoJwCst1qTsiWdb"
    assert isinstance(events[-1], MessageEnd) and events[-1].reasoning_ms is not None


async def test_a_529_body_becomes_an_overloaded_error() -> None:
    def handler(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(529, content=error_body("overloaded_error", "Overloaded"))

    with pytest.raises(ProviderError) as caught:
        await collect(provider(handler))
    assert (caught.value.kind, caught.value.status, caught.value.retryable) == (
        ErrorKind.OVERLOADED, 529, True)


async def test_a_429_carries_its_retry_after() -> None:
    def handler(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(429, headers={"retry-after": "7"},
                               content=error_body("rate_limit_error", "slow down"))

    with pytest.raises(ProviderError) as caught:
        await collect(provider(handler))
    assert (caught.value.kind, caught.value.retry_after_s) == (ErrorKind.RATE_LIMITED, 7.0)


async def test_an_http_date_retry_after_is_read_too() -> None:
    when = format_datetime(datetime.now(UTC).replace(microsecond=0), usegmt=True)

    def handler(_: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(429, headers={"retry-after": when},
                               content=error_body("rate_limit_error", "slow down"))

    with pytest.raises(ProviderError) as caught:
        await collect(provider(handler))
    assert caught.value.retry_after_s is not None and caught.value.retry_after_s <= 1.0


async def test_an_idle_read_timeout_mid_stream_is_an_interrupted_stream_not_a_hang() -> None:
    body = Body(start(), fail=httpx2.ReadTimeout("no data for read_timeout_s"))
    events: list[ChatStreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        async for event in provider(lambda _: sse_response(body)).stream_chat(REQUEST):
            events.append(event)
    assert caught.value.kind is ErrorKind.STREAM_INTERRUPTED and caught.value.retryable
    assert events == [MessageStart(id="msg_1", model="claude-sonnet-5")]
    assert body.closed


async def test_a_timeout_before_any_byte_is_a_network_error() -> None:
    def handler(_: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectTimeout("connect timed out")

    with pytest.raises(ProviderError) as caught:
        await collect(provider(handler))
    assert caught.value.kind is ErrorKind.NETWORK


async def test_closing_the_generator_closes_the_response() -> None:
    body = Body(start(), text_block(0, "never read"), end(), hang=True)
    stream = provider(lambda _: sse_response(body)).stream_chat(REQUEST)
    assert await anext(stream) == MessageStart(id="msg_1", model="claude-sonnet-5")
    await stream.aclose()
    assert body.closed and body.sent == 1


async def test_cancelling_the_consumer_closes_the_response() -> None:
    body = Body(start(), hang=True)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in provider(lambda _: sse_response(body)).stream_chat(REQUEST):
            first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert body.closed


async def test_a_server_that_never_closes_after_message_stop_cannot_hang_the_turn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "DRAIN_GRACE_S", 0.01)
    body = Body(start() + text_block(0, "complete") + end(), hang=True)
    events = await asyncio.wait_for(collect(provider(lambda _: sse_response(body))), 5)
    assert isinstance(events[-1], MessageEnd)
    assert body.closed


async def test_an_in_stream_error_ends_the_stream_with_its_kind() -> None:
    body = Body(start(), b'event: error\ndata: {"type":"error","error":{"details":null,'
                         b'"type":"overloaded_error","message":"Overloaded"}        }\n\n')
    with pytest.raises(ProviderError) as caught:
        await collect(provider(lambda _: sse_response(body)))
    assert (caught.value.kind, caught.value.in_stream) == (ErrorKind.OVERLOADED, True)


# -- models ----------------------------------------------------------------------------------


def model(model_id: str, name: str, context: int | None, output: int | None) -> dict[str, Any]:
    return {"type": "model", "id": model_id, "display_name": name,
            "created_at": "2026-06-30T00:00:00Z", "max_input_tokens": context,
            "max_tokens": output}


async def test_list_models_reads_every_page_with_token_limits() -> None:
    seen: list[httpx2.Request] = []
    pages = {
        None: {"data": [model("claude-opus-5-5", "Claude Opus 5.5", 1_000_000, 128_000)],
               "has_more": True, "first_id": "claude-opus-5-5", "last_id": "claude-opus-5-5"},
        "claude-opus-5-5": {"data": [model("claude-haiku-4-5-20251001", "Claude Haiku 4.5",
                                           None, None)],
                            "has_more": False, "first_id": "claude-haiku-4-5-20251001",
                            "last_id": "claude-haiku-4-5-20251001"},
    }

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=pages[request.url.params.get("after_id")])

    models = await provider(handler).list_models()
    assert [(m.id, m.display_name, m.context_window, m.max_output_tokens) for m in models] == [
        ("claude-opus-5-5", "Claude Opus 5.5", 1_000_000, 128_000),
        ("claude-haiku-4-5-20251001", "Claude Haiku 4.5", 200_000, 64_000),  # known limits
    ]
    assert [str(r.url) for r in seen] == [
        "https://api.anthropic.com/v1/models?limit=1000",
        "https://api.anthropic.com/v1/models?limit=1000&after_id=claude-opus-5-5"]
    assert seen[0].method == "GET" and seen[0].headers["x-api-key"] == "sk-test"
    assert seen[0].headers["anthropic-version"] == "2023-06-01"


@pytest.mark.parametrize("response", [
    httpx2.Response(401, content=error_body("authentication_error", "invalid x-api-key")),
    httpx2.Response(500, content=b"oops"),
    httpx2.Response(200, json={"unexpected": True}),
])
async def test_list_models_falls_back_to_the_built_in_list(response: httpx2.Response) -> None:
    models = await provider(lambda _: response).list_models()
    assert models == list(AnthropicProvider.DEFAULT_MODELS)
    assert all(m.context_window and m.max_output_tokens for m in models)
