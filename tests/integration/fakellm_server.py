"""Start the fakellm server for a test: in-process on a loopback socket, or as a subprocess the
way people run it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from apps.engine.fakellm.app import create_app
from tests.conftest import ROOT


class RequestGate:
    """Holds the model requests whose body contains ``marker`` until :meth:`open` — a model
    that takes its time over them; counts them and the clients that gave up on one (closed the
    connection) while it was held."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.held = 0
        self.abandoned = 0
        self._open = asyncio.Event()
        self._changed = asyncio.Event()

    def open(self) -> None:
        """Let the held requests and every later one through."""
        self._open.set()

    async def until(self, *, held: int = 0, abandoned: int = 0, timeout_s: float = 10) -> None:
        """Wait until at least ``held`` requests were held and ``abandoned`` given up."""
        async with asyncio.timeout(timeout_s):
            while self.held < held or self.abandoned < abandoned:
                self._changed.clear()
                await self._changed.wait()

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def gated(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                return await app(scope, receive, send)
            messages = [await receive()]
            while messages[-1].get("more_body"):
                messages.append(await receive())
            body = b"".join(m.get("body", b"") for m in messages)
            if self.marker in body and not await self._hold(receive):
                return
            replay = iter(messages)

            async def replayed() -> Any:
                return next(replay, None) or await receive()

            await app(scope, replayed, send)
        return gated

    async def _hold(self, receive: Receive) -> bool:
        """Wait for :meth:`open`; False when the client left first (ASGI ``http.disconnect``)."""
        self.held += 1
        self._changed.set()
        opened, gone = (asyncio.ensure_future(self._open.wait()),
                        asyncio.ensure_future(receive()))
        await asyncio.wait({opened, gone}, return_when=asyncio.FIRST_COMPLETED)
        if opened.done() and not gone.done():
            gone.cancel()
            return True
        opened.cancel()
        self.abandoned += 1
        self._changed.set()
        return False


def _recording(app: Any, bodies: list[dict[str, Any]]) -> Any:
    """``app`` that also appends every JSON request body it receives to ``bodies``, in order."""

    async def recorder(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        chunks: list[bytes] = []

        async def reading() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    bodies.append(json.loads(b"".join(chunks)))
            return message

        await app(scope, reading, send)

    return recorder


@contextlib.asynccontextmanager
async def serve_fakellm(rate: float = 0.0, *, gate: RequestGate | None = None,
                        bodies: list[dict[str, Any]] | None = None) -> AsyncIterator[str]:
    """Serve fakellm in this event loop on 127.0.0.1 (behind ``gate``, if given); yield its
    origin URL. ``bodies``: every request body the model receives is appended there (what the
    provider sent, verbatim)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(rate=rate)
    if bodies is not None:
        app = _recording(app, bodies)
    server = uvicorn.Server(uvicorn.Config(gate.wrap(app) if gate else app,
                                           log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def fakellm_process(rate: float = 0.0) -> Iterator[str]:
    """``python -m apps.engine.fakellm`` in a subprocess; yield its origin URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "apps.engine.fakellm", "--host", "127.0.0.1", "--port",
         str(port), "--rate", str(rate)], cwd=ROOT)
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(f"{origin}/health", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("fakellm did not start")
            time.sleep(0.05)
        yield origin
    finally:
        process.terminate()
        process.wait(timeout=10)
