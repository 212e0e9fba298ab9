"""A real HTTP(S) server on 127.0.0.1 for the network tool tests (a thread, the standard
library's ``http.server``): each path answers with a canned :class:`Reply`, and every request
it received is recorded (path, headers, TLS server name)."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What a path answers: ``chunks`` (when set) are sent with chunked transfer encoding."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: Callable[[], Iterable[bytes]] | None = None


@dataclass
class Received:
    path: str
    headers: dict[str, str]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        self.server.received.append(Received(self.path, dict(self.headers.items())))
        route = self.server.routes.get(self.path)
        reply = route(self) if callable(route) else route
        if reply is None:
            reply = Reply(404, {"Content-Type": "text/plain"}, b"no such page")
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.chunks is not None:
            self._send_chunked(reply.chunks())
        else:
            if "Content-Length" not in reply.headers:
                self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

    def _send_chunked(self, chunks: Iterable[bytes]) -> None:
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, routes: dict[str, Any]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = routes
        self.received: list[Received] = []
        self.server_names: list[str | None] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that stops reading (the size cap) breaks the pipe: expected


class LoopbackServer:
    """``with LoopbackServer(routes) as server``: serves until the block ends.

    ``routes``: path (with query) -> Reply, or a callable taking the handler and returning one.
    ``tls``: an SSLContext to serve HTTPS with; the SNI names clients send are recorded in
    ``server_names``.
    """

    def __init__(self, routes: dict[str, Any], *, tls: ssl.SSLContext | None = None) -> None:
        self._server = _Server(routes)
        if tls is not None:
            tls.sni_callback = lambda _sock, name, _ctx: self._server.server_names.append(name)
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def received(self) -> list[Received]:
        return self._server.received

    @property
    def server_names(self) -> list[str | None]:
        return self._server.server_names

    def url(self, path: str = "/", *, host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
