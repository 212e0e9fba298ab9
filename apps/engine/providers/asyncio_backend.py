"""httpcore2's network backend on asyncio's own transports and protocols, and the httpx2
transport that uses it for the providers' streams.

httpcore2 runs on asyncio through anyio, and every socket operation pays for it: an
``anyio.fail_after`` cancel scope and its loop timer, a ``map_exceptions`` context manager, a
checkpoint per send and a ``pause_reading``/``resume_reading`` pair per receive. A provider's
stream is one small read per token, so under issue 20's benchmark that was a tenth of the run
worker's CPU, and streaming 64 paced streams costs about 55 µs per read here against 90-105 µs
through anyio (the same requests, measured on the 2-core machine). The same design is proposed
upstream (pydantic/httpx2#1170, "Add a native asyncio network backend"); once httpx2 selects it
by itself, this module goes.

The interface is httpcore2's ``AsyncNetworkBackend``/``AsyncNetworkStream``
(``httpcore2/_backends/base.py``), with the exceptions of its anyio backend: ``ConnectError``,
``ConnectTimeout``, ``ReadError``, ``ReadTimeout``, ``WriteError``, ``WriteTimeout``, which
httpx2 maps to its own of the same names.
"""

from __future__ import annotations

import asyncio
import math
import ssl
from collections import deque
from collections.abc import Iterable
from typing import Any, cast

import httpcore2
import httpx2
from httpcore2 import (
    ConnectError,
    ConnectTimeout,
    ReadError,
    ReadTimeout,
    WriteError,
    WriteTimeout,
)

__all__ = ["AsyncioBackend", "AsyncioHTTPTransport", "AsyncioStream"]

# (level, option, value) or (level, option, None, length): what socket.setsockopt takes
SocketOption = tuple[int, int, int | bytes | bytearray] | tuple[int, int, None, int]

# Reading goes on while nobody reads (so an idle connection's close is seen as it happens),
# up to this much buffered; it resumes once reads bring the buffer down to LOW_WATER.
HIGH_WATER = 256 * 1024
LOW_WATER = 64 * 1024


class _Buffered(asyncio.Protocol):
    """The connection's protocol: received bytes queued as they came, end of file, the error
    that closed it, and one waiter each for data and for the write buffer to drain."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: deque[bytes] = deque()
        self.size = 0  # bytes in chunks
        self.eof = False  # no more data will come
        self.error: BaseException | None = None  # what closed the connection, if not a clean end
        self.reading_paused = False
        self.writing_paused = False
        self.data_waiter: asyncio.Future[None] | None = None
        self.drain_waiter: asyncio.Future[None] | None = None
        self.deadline = 0.0  # loop time by which the waiting read must have data
        self.timer: asyncio.TimerHandle | None = None  # armed at or before the deadline

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport, not always an asyncio.Transport subclass (uvloop's are not)
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > HIGH_WATER and not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()
        _wake(self.data_waiter)

    def eof_received(self) -> bool:
        self.eof = True
        _wake(self.data_waiter)
        return False  # the transport closes itself: HTTP/1.1 does not half-close

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        _wake(self.data_waiter)
        _wake(self.drain_waiter)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        _wake(self.drain_waiter)

    async def wait_for_data(self, timeout: float | None) -> None:
        """Wait until data, the end or an error arrives; ``ReadTimeout`` after ``timeout``
        seconds (None: never).

        One timer per connection, not one per read: a stream is a read per token, and a timer
        armed and cancelled for each was a loop heap insertion and removal per token. The
        timer stays armed across reads; when it fires before the current read's deadline (an
        earlier read got its data in time) it re-arms for that deadline, so it fires about
        once per ``timeout`` while the stream flows."""
        loop = asyncio.get_running_loop()
        self.data_waiter = loop.create_future()
        if timeout is None:
            self.deadline = math.inf  # an armed timer from a timed read re-arms no more
        else:
            self.deadline = loop.time() + timeout
            if self.timer is not None and self.timer.when() > self.deadline:
                self.timer.cancel()  # a shorter timeout than the armed one's
                self.timer = None
            if self.timer is None:
                self.timer = loop.call_at(self.deadline, self._expire)
        try:
            await self.data_waiter
        finally:
            self.data_waiter = None

    def _expire(self) -> None:
        self.timer = None
        waiter = self.data_waiter
        if waiter is None or waiter.done():
            return  # no read waits: the next one arms the timer again
        if self.deadline == math.inf:
            return  # this read waits for ever: the next timed one arms the timer again
        loop = waiter.get_loop()
        if loop.time() >= self.deadline:
            waiter.set_exception(ReadTimeout("the read timed out"))
        else:
            self.timer = loop.call_at(self.deadline, self._expire)

    def take(self, max_bytes: int) -> bytes:
        """The oldest chunk, or its first ``max_bytes`` (the rest stays first in line)."""
        data = self.chunks.popleft()
        if len(data) > max_bytes:
            self.chunks.appendleft(data[max_bytes:])
            data = data[:max_bytes]
        self.size -= len(data)
        if self.reading_paused and self.size <= LOW_WATER and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()
        return data


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


async def _wait(waiter: asyncio.Future[None], timeout: float | None,
                error: type[Exception], message: str) -> None:
    """Await ``waiter``, raising ``error(message)`` after ``timeout`` seconds (None: never):
    a write waiting for the peer (rare: a body over the transport's buffer)."""
    if timeout is None:
        await waiter
        return

    def expire() -> None:
        if not waiter.done():
            waiter.set_exception(error(message))

    timer = asyncio.get_running_loop().call_later(timeout, expire)
    try:
        await waiter
    finally:
        timer.cancel()


class AsyncioStream(httpcore2.AsyncNetworkStream):
    """One connection (plain or TLS) as httpcore2 reads and writes it.

    ``read`` returns buffered bytes at once (at most ``max_bytes``), else waits for some;
    ``b""`` at the end of the stream. Raises ``ReadTimeout`` after ``timeout`` seconds of
    silence, ``ReadError`` when the connection broke; ``write`` raises ``WriteTimeout`` when
    the peer does not take the bytes within ``timeout`` and ``WriteError`` on a closed
    connection.
    """

    def __init__(self, transport: asyncio.Transport, protocol: _Buffered) -> None:
        self._transport = transport
        self._protocol = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        if not protocol.chunks and not protocol.eof:
            await protocol.wait_for_data(timeout)
        if protocol.chunks:
            return protocol.take(max_bytes)
        if protocol.error is not None:
            raise ReadError(str(protocol.error) or type(protocol.error).__name__)
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        if self._transport.is_closing() or protocol.error is not None:
            raise WriteError("the connection is closed")
        self._transport.write(buffer)
        if protocol.writing_paused:  # over the transport's write buffer limit: wait for it
            protocol.drain_waiter = asyncio.get_running_loop().create_future()
            try:
                await _wait(protocol.drain_waiter, timeout, WriteTimeout, "the write timed out")
            finally:
                protocol.drain_waiter = None
            if protocol.error is not None or protocol.writing_paused:
                raise WriteError("the connection closed while writing")

    async def aclose(self) -> None:
        """Close now, dropping what is still unsent: a close that waited for the write buffer
        (or for a TLS peer's close_notify) would keep the socket, and let a peer that reads
        late receive a request its caller was told had failed; as httpcore2's anyio backend."""
        self._transport.close()
        await asyncio.sleep(0)  # one turn: a buffer already flushed closes cleanly
        self._transport.abort()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> AsyncioStream:
        """The same connection wrapped in TLS (``loop.start_tls``); raises ``ConnectTimeout``
        when the handshake takes over ``timeout`` seconds, ``ConnectError`` when it fails
        (both close the connection)."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                tls = await loop.start_tls(  # asyncio's own limit (60 s) after ours
                    self._transport, self._protocol, ssl_context,
                    server_hostname=server_hostname,
                    ssl_handshake_timeout=None if timeout is None else timeout + 1.0)
        except TimeoutError:
            self._transport.close()
            raise ConnectTimeout("the TLS handshake timed out") from None
        except OSError as exc:  # ssl.SSLError included: a bad certificate, a reset
            self._transport.close()
            raise ConnectError(str(exc)) from exc
        tls = cast(asyncio.Transport, tls)
        self._protocol.transport = tls  # pausing reads pauses the decrypted stream
        return AsyncioStream(tls, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        """``ssl_object``, ``client_addr``, ``server_addr``, ``socket`` as httpcore2 names them;
        ``is_readable``: the peer sent something or hung up (how the pool tells that an idle
        connection is dead), known from the buffer without a system call."""
        if info == "is_readable":
            return bool(self._protocol.chunks) or self._protocol.eof
        name = {"ssl_object": "ssl_object", "client_addr": "sockname",
                "server_addr": "peername", "socket": "socket"}.get(info)
        return None if name is None else self._transport.get_extra_info(name)


class AsyncioBackend(httpcore2.AsyncNetworkBackend):
    """Connections over ``loop.create_connection`` / ``create_unix_connection``; raises
    ``ConnectTimeout`` after ``timeout`` seconds and ``ConnectError`` on an ``OSError``
    (refused, unreachable, name not resolved). asyncio already sets ``TCP_NODELAY``;
    ``socket_options`` are applied once connected, as httpcore2's anyio backend does."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[SocketOption] | None = None
                          ) -> AsyncioStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address is not None else None
        return await _connect(lambda: loop.create_connection(_Buffered, host, port,
                                                             local_addr=local),
                              timeout, socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[SocketOption] | None = None
                                  ) -> AsyncioStream:
        loop = asyncio.get_running_loop()
        return await _connect(lambda: loop.create_unix_connection(_Buffered, path),
                              timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _connect(open_connection: Any, timeout: float | None,
                   socket_options: Iterable[SocketOption] | None) -> AsyncioStream:
    try:
        async with asyncio.timeout(timeout):
            transport, protocol = await open_connection()
    except TimeoutError:
        raise ConnectTimeout("the connection timed out") from None
    except OSError as exc:
        raise ConnectError(str(exc) or type(exc).__name__) from exc
    sock = transport.get_extra_info("socket")  # asyncio's TransportSocket: setsockopt works
    try:
        for option in socket_options or ():
            sock.setsockopt(*option)
    except OSError as exc:
        transport.close()
        raise ConnectError(f"a socket option was refused: {exc}") from exc
    return AsyncioStream(transport, protocol)


class AsyncioHTTPTransport(httpx2.AsyncHTTPTransport):
    """``httpx2.AsyncHTTPTransport`` (HTTP/1.1, certificates verified, no proxy) whose
    connection pool runs on :class:`AsyncioBackend`. ``limits``: the pool's; the default caps
    neither connections nor idle ones (closed after 5 s), because each run streams on its own
    and a worker's runs are the bound: httpx2's default of 100 would queue the 101st run's
    request, and of 20 kept alive, reconnect all but 20 of the runs that start together
    (as a busy room's replies and the benchmark's steps do). ``ssl_context``: the
    certificates to trust (httpx2's default context when None)."""

    def __init__(self, *, limits: httpx2.Limits | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        # Not super().__init__: it would build a pool (and a TLS context) only to drop them;
        # the parent's request path uses nothing but ``_pool``.
        limits = limits or httpx2.Limits(max_connections=None, max_keepalive_connections=None)
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context or httpx2.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=AsyncioBackend(),
        )
