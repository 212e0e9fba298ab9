"""The providers' asyncio network backend over real loopback sockets, plain, TLS (a trustme CA)
and Unix: bytes arrive whole and in order, and every failure is httpcore2's exception of the
anyio backend — a silent peer a read timeout, a peer that takes nothing a write timeout, a dead
idle connection not reused, an untrusted or silent TLS server a connect error or timeout."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpcore2
import httpx2
import pytest
import trustme

from apps.engine.providers.asyncio_backend import (
    HIGH_WATER,
    AsyncioBackend,
    AsyncioHTTPTransport,
    AsyncioStream,
)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def serving(handler: Handler, tls: ssl.SSLContext | None = None
                  ) -> AsyncIterator[tuple[int, list[int]]]:
    """A loopback server running ``handler`` per connection: its port, and a list that gets
    one entry per connection accepted."""
    accepted: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    listener = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    try:
        yield listener.sockets[0].getsockname()[1], accepted
    finally:
        listener.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 request's body (Content-Length framed), its head read and dropped."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length")), 0)
    return await reader.readexactly(length)


def ok(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


async def read_all(stream: AsyncioStream, size: int, max_bytes: int) -> bytes:
    received = bytearray()
    while len(received) < size:
        data = await stream.read(max_bytes, timeout=5)
        assert data and len(data) <= max_bytes
        received += data
    return bytes(received)


async def test_a_stream_of_small_writes_arrives_whole_and_in_order() -> None:
    pieces = [b"data: %d\n\n" % i for i in range(300)]

    async def stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for piece in pieces:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0)
        writer.write(b"0\r\n\r\n")
        await reader.read()

    async with (serving(stream) as (port, _),
                httpx2.AsyncClient(transport=AsyncioHTTPTransport()) as client,
                client.stream("POST", f"http://127.0.0.1:{port}/", json={}) as response):
        body = b"".join([chunk async for chunk in response.aiter_bytes()])
        assert isinstance(response.extensions["network_stream"], AsyncioStream)
    assert body == b"".join(pieces)


async def test_a_chunk_over_max_bytes_is_read_in_parts_and_reading_pauses_at_high_water(
) -> None:
    data = bytes(range(256)) * (4 * HIGH_WATER // 256)  # 1 MiB in one write

    async def send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()
        await reader.read()

    async with serving(send) as (port, _):
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        await asyncio.sleep(0.2)  # nobody reads: the buffer stops near the high-water mark
        buffered = stream._protocol.size  # at most one receive (asyncio's: 256 KiB) past it
        assert HIGH_WATER < buffered <= HIGH_WATER + 256 * 1024 < len(data)
        assert stream._protocol.reading_paused
        assert await read_all(stream, len(data), max_bytes=10_000) == data
        assert not stream._protocol.reading_paused
        await stream.aclose()


async def test_a_silent_peer_is_a_read_timeout() -> None:
    async with serving(lambda reader, writer: reader.read()) as (port, _):
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore2.ReadTimeout):
            await stream.read(100, timeout=0.2)
        await stream.aclose()


async def test_the_read_timeout_counts_from_each_read_not_from_the_first() -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(6):  # 0.6 s of data, 0.1 s apart, then silence
            writer.write(b"x")
            await asyncio.sleep(0.1)
        await reader.read()

    async with serving(trickle) as (port, _):
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        received = b""
        while len(received) < 6:
            received += await stream.read(100, timeout=0.3)  # the one timer, re-armed
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(httpcore2.ReadTimeout):
            await stream.read(100, timeout=0.05)  # shorter than the armed timer's
        assert loop.time() - started < 0.25
        await stream.aclose()


async def test_a_read_without_a_timeout_outwaits_an_earlier_reads_timer() -> None:
    async def late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"a")
        await asyncio.sleep(0.4)  # past the first read's deadline
        writer.write(b"b")
        await reader.read()

    async with serving(late) as (port, _):
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        assert await stream.read(100, timeout=0.2) == b"a"  # arms the timer
        assert await stream.read(100, timeout=None) == b"b"
        await stream.aclose()


async def test_a_peer_that_takes_nothing_is_a_write_timeout() -> None:
    never = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await never.wait()  # reads nothing: the kernel's buffers fill, then the transport's

    async with serving(hold) as (port, _):
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore2.WriteTimeout):
            await stream.write(b"x" * (64 * 1024 * 1024), timeout=0.3)
        sock = stream.get_extra_info("socket")
        await stream.aclose()
        await asyncio.sleep(0)
        assert sock.fileno() == -1  # closed now: the unsent rest is dropped, not sent late
        with pytest.raises(httpcore2.WriteError):
            await stream.write(b"more", timeout=1)
        never.set()


async def test_a_slow_reader_receives_every_byte_of_a_large_body() -> None:
    body = bytes(range(256)) * 16384  # 4 MiB

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"content-length: %d" % len(body) in head.lower()
        received = bytearray()
        while len(received) < len(body):
            received += await reader.read(256 * 1024)
            await asyncio.sleep(0.005)
        writer.write(ok(b"%d %d" % (len(received), hash(bytes(received)) == hash(body))))
        await reader.read()

    async with serving(slow) as (port, _), httpx2.AsyncClient(
            transport=AsyncioHTTPTransport()) as client:
        response = await client.post(f"http://127.0.0.1:{port}/", content=body)
    assert response.content == b"%d 1" % len(body)


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(ok(b"hello"))
        await writer.drain()  # then hang up, though the response said keep-alive

    async with serving(once) as (port, accepted), httpx2.AsyncClient(
            transport=AsyncioHTTPTransport()) as client:
        first = await client.get(f"http://127.0.0.1:{port}/")
        await asyncio.sleep(0.2)  # the close reaches the idle connection's protocol
        second = await client.get(f"http://127.0.0.1:{port}/")
    assert (first.content, second.content, len(accepted)) == (b"hello", b"hello", 2)


async def test_a_kept_alive_connection_is_reused_and_not_readable_while_idle() -> None:
    async def keep(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):
            await read_request(reader)
            writer.write(ok(b"again"))
        await reader.read()

    async with serving(keep) as (port, accepted), httpx2.AsyncClient(
            transport=AsyncioHTTPTransport()) as client:
        first = await client.get(f"http://127.0.0.1:{port}/")
        assert first.extensions["network_stream"].get_extra_info("is_readable") is False
        second = await client.get(f"http://127.0.0.1:{port}/")
    assert (second.content, len(accepted)) == (b"again", 1)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    return context


async def test_tls_to_a_trusted_server(ca: trustme.CA) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert await read_request(reader) == b'{"q":1}'
        writer.write(ok(b"secret"))
        await reader.read()

    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    async with serving(answer, tls=server_tls(ca)) as (port, _), httpx2.AsyncClient(
            transport=AsyncioHTTPTransport(ssl_context=trusted)) as client:
        response = await client.post(f"https://localhost:{port}/", json={"q": 1})
        network = response.extensions["network_stream"]
        assert response.content == b"secret"
        assert isinstance(network.get_extra_info("ssl_object"), ssl.SSLObject)
        assert network.get_extra_info("server_addr")[1] == port


async def test_an_untrusted_certificate_is_a_connect_error(ca: trustme.CA) -> None:
    async with serving(read_request, tls=server_tls(ca)) as (port, _), httpx2.AsyncClient(
            transport=AsyncioHTTPTransport()) as client:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(f"https://localhost:{port}/")


async def test_a_tls_server_that_never_answers_is_a_connect_timeout() -> None:
    async with serving(lambda reader, writer: reader.read()) as (port, _), httpx2.AsyncClient(
            transport=AsyncioHTTPTransport(), timeout=httpx2.Timeout(5, connect=0.3)) as client:
        with pytest.raises(httpx2.ConnectTimeout):
            await client.get(f"https://localhost:{port}/")


async def test_nothing_listening_is_a_connect_error_and_socket_options_are_applied() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    closed_port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(httpcore2.ConnectError):
        await AsyncioBackend().connect_tcp("127.0.0.1", closed_port, timeout=5)
    async with serving(lambda reader, writer: reader.read()) as (port, _):
        stream = await AsyncioBackend().connect_tcp(
            "127.0.0.1", port, timeout=5,
            socket_options=[(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)])
        assert stream.get_extra_info("socket").getsockopt(
            socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        await stream.aclose()


async def test_a_unix_socket_round_trip(tmp_path: Path) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write((await reader.readexactly(4)).upper())
        await writer.drain()
        writer.close()

    path = str(tmp_path / "s")
    listener = await asyncio.start_unix_server(echo, path)
    try:
        stream = await AsyncioBackend().connect_unix_socket(path, timeout=5)
        await stream.write(b"ping", timeout=5)
        assert await stream.read(100, timeout=5) == b"PING"
        assert await stream.read(100, timeout=5) == b""  # the peer's end
        assert stream.get_extra_info("is_readable") is True
        await stream.aclose()
    finally:
        listener.close()
