"""The providers' transport (httpx2 over aiohttp) against real loopback servers, plain and TLS
(a trustme CA): the request goes out as httpx2 built it, the body arrives whole and in order,
connections are kept and not reused once dead, and every failure is the httpx2 exception
httpcore2 raised for it — refused a connect error (not a timeout), a silent TLS server a connect
timeout, a silent response a read timeout, a hang-up or broken HTTP a protocol error."""

from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx2
import pytest
import trustme

from apps.engine.providers.aiohttp_transport import AiohttpTransport

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


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One HTTP/1.1 request (Content-Length framed): its head and its body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length")), 0)
    return head, await reader.readexactly(length)


def ok(body: bytes, *headers: bytes) -> bytes:
    head = b"".join(header + b"\r\n" for header in headers)
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), head, body)


def answering(answer: bytes) -> Handler:
    """A handler that reads the request, writes ``answer`` and hangs up."""

    async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()

    return answer_once


def client(**options: object) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=AiohttpTransport(**options),  # type: ignore[arg-type]
                              timeout=httpx2.Timeout(5))


async def test_the_request_goes_out_as_httpx2_built_it() -> None:
    seen: list[tuple[bytes, bytes]] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(ok(b"done", b"x-answer: 42"))
        await reader.read()

    async with serving(record) as (port, _), client() as http:
        response = await http.post(f"http://127.0.0.1:{port}/v1/messages?beta=true",
                                   json={"q": "é"}, headers={"x-api-key": "k"})
    head, body = seen[0]
    lines = head.decode("latin-1").split("\r\n")
    names = [line.split(":")[0].lower() for line in lines[1:] if line]
    assert lines[0] == "POST /v1/messages?beta=true HTTP/1.1"
    assert sorted(names) == sorted(set(names))  # httpx2's headers, each once
    assert {"host", "content-length", "content-type", "x-api-key", "user-agent"} <= set(names)
    assert f"user-agent: {http.headers['user-agent']}" in head.decode().lower()
    assert body == '{"q":"é"}'.encode()
    assert (response.status_code, response.content) == (200, b"done")
    assert response.headers["x-answer"] == "42"
    assert response.extensions["http_version"] == b"HTTP/1.1"
    assert response.reason_phrase == "OK"


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

    async with (serving(stream) as (port, _), client() as http,
                http.stream("POST", f"http://127.0.0.1:{port}/", json={}) as response):
        body = b"".join([chunk async for chunk in response.aiter_bytes()])
    assert body == b"".join(pieces)


async def test_a_compressed_body_is_decoded_once() -> None:
    text = b"event: ping\ndata: {}\n\n" * 100

    async def gzipped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(ok(gzip.compress(text), b"content-encoding: gzip"))
        await reader.read()

    async with serving(gzipped) as (port, _), client() as http:
        response = await http.get(f"http://127.0.0.1:{port}/")
    assert response.content == text


async def test_a_silent_response_is_a_read_timeout_counted_from_each_read() -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for _ in range(6):  # 0.6 s of data, 0.1 s apart, then silence
            writer.write(b"1\r\nx\r\n")
            await asyncio.sleep(0.1)
        await reader.read()

    received = b""
    async with (serving(trickle) as (port, _),
                client() as http,
                http.stream("GET", f"http://127.0.0.1:{port}/",
                            timeout=httpx2.Timeout(5, read=0.3)) as response):
        with pytest.raises(httpx2.ReadTimeout):
            async for chunk in response.aiter_bytes():
                received += chunk
    assert received == b"x" * 6


async def test_a_server_that_never_answers_is_a_read_timeout() -> None:
    async with serving(lambda reader, writer: reader.read()) as (port, _), client() as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.get(f"http://127.0.0.1:{port}/", timeout=httpx2.Timeout(5, read=0.2))


async def test_a_slow_reader_receives_every_byte_of_a_large_body() -> None:
    body = bytes(range(256)) * 16384  # 4 MiB

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"content-length: %d" % len(body) in head.lower()
        received = bytearray()
        while len(received) < len(body):
            received += await reader.read(256 * 1024)
            await asyncio.sleep(0.005)
        writer.write(ok(b"%d %d" % (len(received), bytes(received) == body)))
        await reader.read()

    async with serving(slow) as (port, _), client() as http:
        response = await http.post(f"http://127.0.0.1:{port}/", content=body)
    assert response.content == b"%d 1" % len(body)


async def test_a_kept_alive_connection_is_reused() -> None:
    async def keep(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):
            await read_request(reader)
            writer.write(ok(b"again"))
        await reader.read()

    async with serving(keep) as (port, accepted), client() as http:
        await http.get(f"http://127.0.0.1:{port}/")
        second = await http.get(f"http://127.0.0.1:{port}/")
    assert (second.content, len(accepted)) == (b"again", 1)


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(ok(b"hello"))
        await writer.drain()  # then hang up, though the response said keep-alive

    async with serving(once) as (port, accepted), client() as http:
        first = await http.get(f"http://127.0.0.1:{port}/")
        await asyncio.sleep(0.2)  # the close reaches the idle connection
        second = await http.get(f"http://127.0.0.1:{port}/")
    assert (first.content, second.content, len(accepted)) == (b"hello", b"hello", 2)


async def test_closing_a_response_before_its_end_closes_the_connection() -> None:
    closed = asyncio.Event()

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nx\r\n")
        await reader.read()  # returns at the client's close
        closed.set()

    async def first_piece(http: httpx2.AsyncClient, port: int) -> bytes:
        async with http.stream("GET", f"http://127.0.0.1:{port}/") as response:
            async for piece in response.aiter_bytes():
                return piece
        return b""

    async with serving(endless) as (port, accepted), client() as http:
        assert await first_piece(http, port) == b"x"
        await asyncio.wait_for(closed.wait(), 5)
        assert await first_piece(http, port) == b"x"  # on a new connection
    assert len(accepted) == 2


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel",  # then hangs up
    b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhel",
])
async def test_a_server_that_hangs_up_mid_body_is_a_protocol_error(answer: bytes) -> None:
    async with serving(answering(answer)) as (port, _), client() as http:
        with pytest.raises(httpx2.RemoteProtocolError, match="^peer closed connection without"):
            await http.get(f"http://127.0.0.1:{port}/")


@pytest.mark.parametrize("answer", [b"", b"this is not HTTP\r\n\r\n"])
async def test_no_response_or_a_broken_one_is_a_protocol_error(answer: bytes) -> None:
    async with serving(answering(answer)) as (port, _), client() as http:
        with pytest.raises(httpx2.RemoteProtocolError):
            await http.get(f"http://127.0.0.1:{port}/")


async def test_nothing_listening_is_a_connect_error_not_a_timeout() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    closed_port = probe.getsockname()[1]
    probe.close()
    async with client() as http:
        with pytest.raises(httpx2.ConnectError):
            await http.get(f"http://127.0.0.1:{closed_port}/")


async def test_a_url_that_is_not_http_is_an_unsupported_protocol() -> None:
    async with client() as http:
        with pytest.raises(httpx2.UnsupportedProtocol):
            await http.get("ftp://127.0.0.1:1/")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    return context


async def test_tls_to_a_trusted_server(ca: trustme.CA) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert (await read_request(reader))[1] == b'{"q":1}'
        writer.write(ok(b"secret"))
        await reader.read()

    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    async with serving(answer, tls=server_tls(ca)) as (port, _), client(
            ssl_context=trusted) as http:
        response = await http.post(f"https://localhost:{port}/", json={"q": 1})
    assert response.content == b"secret"


async def test_an_untrusted_certificate_is_a_connect_error(ca: trustme.CA) -> None:
    async def quiet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)

    async with serving(quiet, tls=server_tls(ca)) as (port, _), client() as http:
        with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await http.get(f"https://localhost:{port}/")


async def test_a_tls_server_that_never_answers_is_a_connect_timeout() -> None:
    async with serving(lambda reader, writer: reader.read()) as (port, _), client() as http:
        with pytest.raises(httpx2.ConnectTimeout):
            await http.get(f"https://localhost:{port}/", timeout=httpx2.Timeout(5, connect=0.3))


async def test_closing_the_transport_ends_a_body_being_read() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nx\r\n")
        await reader.read()

    transport = AiohttpTransport()
    http = httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(30))
    async with serving(endless) as (port, _):
        async with http.stream("GET", f"http://127.0.0.1:{port}/") as response:
            pieces = response.aiter_bytes()
            assert await anext(pieces) == b"x"
            waiting = asyncio.create_task(anext(pieces))
            await asyncio.sleep(0.1)
            await transport.aclose()  # the worker stops while the run still streams
            with pytest.raises(httpx2.ReadError):
                await asyncio.wait_for(waiting, 5)
        await http.aclose()


async def test_a_header_value_with_a_line_break_is_a_local_protocol_error() -> None:
    async with serving(lambda reader, writer: reader.read()) as (port, accepted), client() as http:
        with pytest.raises(httpx2.LocalProtocolError):
            await http.get(f"http://127.0.0.1:{port}/", headers={"x-api-key": "sk-1\nX: y"})


async def test_cookies_are_httpx2s_alone() -> None:
    seen: list[bytes] = []

    async def cookies(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):
            head, _ = await read_request(reader)
            seen.append(head)
            writer.write(ok(b"", b"set-cookie: __cf_bm=tok; Path=/"))
        await reader.read()

    async with serving(cookies) as (port, _), client() as http:
        await http.get(f"http://127.0.0.1:{port}/")
        http.cookies.clear()
        await http.get(f"http://127.0.0.1:{port}/")
    assert b"cookie" not in seen[1].lower().replace(b"set-cookie", b"")


async def test_a_long_header_line_is_taken() -> None:
    policy = b"x-policy: " + b"a" * 12_000

    async def long_head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(ok(b"fine", policy))
        await reader.read()

    async with serving(long_head) as (port, _), client() as http:
        response = await http.get(f"http://127.0.0.1:{port}/")
    assert (response.content, len(response.headers["x-policy"])) == (b"fine", 12_000)


async def test_error_messages_do_not_quote_the_path_or_query() -> None:
    async with serving(answering(b"this is not HTTP\r\n\r\n")) as (port, _), client() as http:
        with pytest.raises(httpx2.RemoteProtocolError) as raised:
            await http.get(f"http://127.0.0.1:{port}/v1beta/models?key=secret")
    assert "secret" not in str(raised.value) and "v1beta" not in str(raised.value)


async def test_credentials_in_the_url_go_as_httpx2s_authorization_header() -> None:
    seen: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append((await read_request(reader))[0])
        writer.write(ok(b"in"))
        await reader.read()

    async with serving(record) as (port, _), client() as http:
        response = await http.get(f"http://user:secret@127.0.0.1:{port}/v1/models")
    assert response.content == b"in"
    assert b"\r\nAuthorization: Basic dXNlcjpzZWNyZXQ=\r\n" in seen[0]
    assert seen[0].startswith(b"GET /v1/models HTTP/1.1")
