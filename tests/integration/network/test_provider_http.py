"""HttpProvider's shared machinery over a real loopback socket: a stream that goes silent is an
error (not a hang), closing or cancelling the consumer closes the connection, an HTTP error body
is classified, and a server that hangs up mid-stream gives ``stream_interrupted``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ChatStreamEvent, ContentDelta, MessageEnd
from apps.engine.messages import ChatRequest, Message
from apps.engine.providers.base import HttpCall, HttpProvider, ProviderSettings
from apps.engine.providers.sse import SSEEvent

REQUEST = ChatRequest(model="m", messages=[Message(role="user", content="hi")])
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class LineTranslator:
    """Each SSE data is a text delta; ``[END]`` ends the response."""

    def __init__(self) -> None:
        self.ended = False

    def feed(self, event: SSEEvent) -> list[ChatStreamEvent]:
        if event.data == "[END]":
            self.ended = True
            return [MessageEnd(stop_reason="stop")]
        return [ContentDelta(text=event.data)]

    def finish(self) -> list[ChatStreamEvent]:
        if not self.ended:
            raise ProviderError(ErrorKind.STREAM_INTERRUPTED, "no end", provider="test")
        return []


class LineProvider(HttpProvider):
    protocol = "test"

    def build_call(self, request: ChatRequest) -> HttpCall:
        return HttpCall(url=f"{self.settings.base_url}/stream", headers={}, body={"m": 1})

    def new_translator(self) -> LineTranslator:
        return LineTranslator()


class Server:
    """A one-handler HTTP/1.1 server on 127.0.0.1 that records when each connection closed."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.closed = asyncio.Event()
        self.requests: list[bytes] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(next((line.split(b":")[1] for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), b"0"))
        self.requests.append(head + await reader.readexactly(length))
        try:
            await self.handler(reader, writer)
            await reader.read()  # wait for the client to hang up
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed.set()
            writer.close()


async def start(handler: Handler) -> tuple[Server, asyncio.Server, str]:
    server = Server(handler)
    listener = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    return server, listener, f"http://127.0.0.1:{port}"


def sse_head() -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n")


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def provider_for(url: str, read_timeout_s: float = 5.0) -> LineProvider:
    return LineProvider(ProviderSettings(protocol="test", base_url=url,
                                         read_timeout_s=read_timeout_s))


async def collect(provider: LineProvider) -> list[ChatStreamEvent]:
    return [event async for event in provider.stream_chat(REQUEST)]


async def test_a_complete_stream_yields_its_events() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head() + chunk(b"data: he") + chunk(b"llo\n\ndata: [END]\n\n")
                     + b"0\r\n\r\n")
        await writer.drain()

    server, listener, url = await start(handler)
    async with listener, await provider_for(url) as provider:
        assert await collect(provider) == [ContentDelta(text="hello"),
                                           MessageEnd(stop_reason="stop")]
    assert json.loads(server.requests[0].split(b"\r\n\r\n", 1)[1]) == {"m": 1}


async def test_a_silent_stream_is_an_error_not_a_hang() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head() + chunk(b"data: first\n\n"))
        await writer.drain()
        await reader.read()  # goes silent until the client gives up and hangs up

    server, listener, url = await start(handler)
    async with listener, await provider_for(url, read_timeout_s=0.2) as provider:
        seen: list[ChatStreamEvent] = []
        with pytest.raises(ProviderError) as raised:
            async with asyncio.timeout(10):
                async for event in provider.stream_chat(REQUEST):
                    seen.append(event)
    assert seen == [ContentDelta(text="first")]
    assert raised.value.kind is ErrorKind.STREAM_INTERRUPTED
    assert "timed out" in raised.value.message


async def test_closing_the_consumer_closes_the_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head() + chunk(b"data: first\n\n"))
        await writer.drain()
        await reader.read()  # returns once the client closes the socket

    server, listener, url = await start(handler)
    async with listener, await provider_for(url) as provider:
        stream = provider.stream_chat(REQUEST)
        assert await anext(stream) == ContentDelta(text="first")
        await stream.aclose()
        async with asyncio.timeout(5):
            await server.closed.wait()


async def test_cancelling_the_consuming_task_closes_the_connection() -> None:
    got_first = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head() + chunk(b"data: first\n\n"))
        await writer.drain()
        await reader.read()

    async def consume(provider: LineProvider) -> None:
        async for _ in provider.stream_chat(REQUEST):
            got_first.set()

    server, listener, url = await start(handler)
    async with listener, await provider_for(url) as provider:
        task = asyncio.create_task(consume(provider))
        await got_first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with asyncio.timeout(5):
            await server.closed.wait()


async def test_http_error_body_is_read_and_classified() -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 529 Overloaded\r\ncontent-type: application/json\r\n"
                     b"retry-after: 4\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    server, listener, url = await start(handler)
    async with listener, await provider_for(url) as provider:
        with pytest.raises(ProviderError) as raised:
            await collect(provider)
    error = raised.value
    assert (error.kind, error.status, error.retry_after_s) == (ErrorKind.OVERLOADED, 529, 4.0)
    assert error.message == "Overloaded"


async def test_server_hanging_up_mid_stream_is_stream_interrupted() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sse_head() + chunk(b"data: partial\n\n"))
        await writer.drain()
        writer.transport.abort()

    server, listener, url = await start(handler)
    async with listener, await provider_for(url) as provider:
        with pytest.raises(ProviderError) as raised:
            await collect(provider)
    assert raised.value.kind is ErrorKind.STREAM_INTERRUPTED


async def test_nothing_listening_is_a_network_error() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    async with await provider_for(f"http://127.0.0.1:{port}") as provider:
        with pytest.raises(ProviderError) as raised:
            await collect(provider)
    assert raised.value.kind is ErrorKind.NETWORK


async def test_a_200_with_a_json_error_body_is_classified_not_streamed() -> None:
    body = b'{"error":{"type":"overloaded_error","message":"upstream busy"}}'

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=utf-8\r\n"
                     b"content-length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()

    server, listener, url = await start(handler)
    async with listener, await provider_for(url) as provider:
        with pytest.raises(ProviderError) as raised:
            await collect(provider)
    assert raised.value.kind is ErrorKind.OVERLOADED
    assert raised.value.message == "upstream busy" and raised.value.status is None


@pytest.mark.parametrize("base_url", ["not-a-url", "ftp://127.0.0.1:1", "http://[::1"])
async def test_an_unusable_base_url_fails_at_once_and_is_not_retryable(base_url: str) -> None:
    async with await provider_for(base_url) as provider:
        with pytest.raises(ProviderError) as raised:
            await collect(provider)
    assert raised.value.kind is ErrorKind.INVALID_REQUEST and not raised.value.retryable
    assert base_url in raised.value.message
