"""The providers' HTTP transport: httpx2's API over aiohttp's client (issue 20: capacity).

A provider's stream is one small read per token. Through httpcore2 and h11 each read was a
trip through several async generators and a pure-Python HTTP parser; aiohttp parses in C
(llhttp) and hands over everything that arrived since the last read as one piece, so under
load several tokens' events cost one pass of the provider's chain instead of one each. On the
2-core machine (bench_fanout, 64 × 5) the run worker's CPU per streamed token fell by 9.6 %
(2.72 -> 2.46 x fakellm's, alternating runs). The providers keep httpx2's client (requests,
timeouts, responses, its content decoding and cookies); only the connection pool and the wire
are aiohttp's.

Not httpx-aiohttp's transport: it reports a refused connection or a server that hung up as
``ConnectTimeout``, and it requires the first httpx as well. Here each aiohttp failure becomes
the httpx2 exception httpcore2 raised for the same failure (:func:`transport_error`), with a
message that never quotes the URL (a gateway's URL may carry a key).

Timeouts: httpx2's ``connect`` bounds opening a connection (name resolution, every address
tried and the TLS handshake included) and ``read`` the silence between two pieces of the
response (aiohttp's ``sock_read``: counted from the last bytes received, also while the
caller works on them). aiohttp has no write timeout (a request body that a peer never takes
ends as a read timeout: the response's clock runs while the body is written) and its pool
never waits here (no connection limit), so ``write`` and ``pool`` do not apply. Idle
connections are kept for aiohttp's default 15 s.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import aiohttp
import httpx2
from yarl import URL

__all__ = ["AiohttpTransport", "transport_error"]

HEADER_LIMIT = 16 * 1024
"""The longest response header line (bytes) taken; aiohttp's default is 8190, where h11 (the
transport before) took a whole head of 16 KiB."""


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport (HTTP/1.1, certificates verified, no proxy, no environment)
    on one ``aiohttp.ClientSession``, made at the first request in the running event loop
    (the providers are kept per loop). ``ssl_context``: the certificates to trust (httpx2's
    default context when None). The session pools connections without a limit: each run
    streams on its own and a worker's runs are the bound. Raises httpx2's transport errors
    (:func:`transport_error`), ``httpx2.UnsupportedProtocol`` for a URL that is not http(s)
    and ``httpx2.LocalProtocolError`` for a request aiohttp refuses to send (a header value
    with a line break: a key pasted with its newline). :meth:`aclose` ends the bodies still
    being read with ``httpx2.ReadError``."""

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self._ssl = ssl_context or httpx2.create_ssl_context(trust_env=False)
        self._session: aiohttp.ClientSession | None = None
        self._open: set[_Body] = set()  # bodies not yet closed, ended by aclose

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme not in ("http", "https"):
            raise httpx2.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{request.url.scheme}://'.")
        timeout = request.extensions.get("timeout", {})
        connect = timeout.get("connect")
        body = await request.aread()
        # httpx2 made the URL's user:password an Authorization header already; aiohttp
        # refuses both at once (found by a newcomer's check: a gateway URL with credentials)
        url = URL(str(request.url.copy_with(userinfo=b"")), encoded=True)
        try:
            response = await self._client().request(
                request.method, url,
                headers=[(name.decode("latin-1"), value.decode("latin-1"))
                         for name, value in request.headers.raw],
                data=body or None, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect,
                                              sock_read=timeout.get("read")))
        except aiohttp.ClientError as exc:
            raise transport_error(exc) from exc
        except ValueError as exc:  # a header value aiohttp will not send, a port out of range
            raise httpx2.LocalProtocolError(str(exc)) from exc
        return httpx2.Response(
            response.status, headers=list(response.raw_headers),
            stream=_Body(response, self._open),
            extensions={"http_version": b"HTTP/1.1",
                        "reason_phrase": (response.reason or "").encode("latin-1")})

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ssl=self._ssl),
                auto_decompress=False,  # httpx2 decodes, as it does the body it is given
                cookie_jar=aiohttp.DummyCookieJar(),  # httpx2 keeps the cookies
                skip_auto_headers=("Content-Type",),  # httpx2 sets it when there is a body
                trust_env=False,  # proxy variables of the host must not reroute API keys
                max_line_size=HEADER_LIMIT, max_field_size=HEADER_LIMIT)
        return self._session

    async def aclose(self) -> None:
        for body in list(self._open):  # closing the session alone would leave them waiting
            body.abort()
        if self._session is not None:
            await self._session.close()


class _Body(httpx2.AsyncByteStream):
    """A response's body as aiohttp receives it: each piece is everything that arrived since
    the last one. Closing it before its end closes the connection (aiohttp's ``release``
    reuses only a connection whose response was read to its end)."""

    def __init__(self, response: aiohttp.ClientResponse, open_bodies: set[_Body]) -> None:
        self._response = response
        self._open = open_bodies
        open_bodies.add(self)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for piece in self._response.content.iter_any():
                yield piece
        except aiohttp.ClientError as exc:
            raise transport_error(exc) from exc

    def abort(self) -> None:
        """End the body now: its reader gets ``httpx2.ReadError``, the connection closes."""
        self._response.content.set_exception(
            aiohttp.ClientConnectionError("the provider's client was closed"))
        self._response.close()
        self._open.discard(self)

    async def aclose(self) -> None:
        self._open.discard(self)
        self._response.release()


def transport_error(exc: aiohttp.ClientError) -> httpx2.TransportError:
    """The httpx2 exception httpcore2 raises for the failure aiohttp reported as ``exc``: a
    connect timeout ``ConnectTimeout``, a response silent past the read timeout
    ``ReadTimeout``, a refused or unresolvable connection or an untrusted certificate
    ``ConnectError``, a peer that hung up before the response ended or broke HTTP/1.1
    ``RemoteProtocolError``, a broken connection ``ReadError``. Messages name the host at
    most, never the URL's path or query."""
    match exc:
        case aiohttp.ConnectionTimeoutError():
            return httpx2.ConnectTimeout("the connection timed out")
        case aiohttp.ServerTimeoutError():
            return httpx2.ReadTimeout("the read timed out")
        case aiohttp.ClientConnectorCertificateError():
            return httpx2.ConnectError(f"cannot connect to {exc.host}:{exc.port}: "
                                       f"{exc.certificate_error}")
        case aiohttp.ClientConnectorError():  # refused, unresolvable, a TLS failure
            return httpx2.ConnectError(f"cannot connect to {exc.host}:{exc.port}: {exc.os_error}")
        case aiohttp.ClientResponseError():  # a response aiohttp could not parse
            return httpx2.RemoteProtocolError(exc.message)
        case aiohttp.ClientPayloadError():  # aiohttp's text quotes an internal 400
            return httpx2.RemoteProtocolError(
                "peer closed connection without sending complete message body")
        case aiohttp.ServerDisconnectedError():
            return httpx2.RemoteProtocolError(str(exc))
        case _:
            return httpx2.ReadError(str(exc) or type(exc).__name__)
