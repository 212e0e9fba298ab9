"""Start the fakellm server for a test: in-process on a loopback socket, or as a subprocess the
way people run it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator

import httpx2
import uvicorn

from apps.engine.fakellm.app import create_app
from tests.conftest import ROOT


@contextlib.asynccontextmanager
async def serve_fakellm(rate: float = 0.0) -> AsyncIterator[str]:
    """Serve fakellm in this event loop on 127.0.0.1; yield its origin URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(rate=rate), log_level="warning",
                                           lifespan="off"))
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
