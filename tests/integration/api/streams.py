"""Reading the API's streamed responses from synchronous tests."""

from __future__ import annotations

from collections.abc import Callable

from asgiref.sync import async_to_sync
from django.http import StreamingHttpResponse


def drain(response: StreamingHttpResponse, sink: Callable[[bytes], None]) -> None:
    """Hand every chunk of the (asynchronous) body to ``sink``, as an ASGI server would.

    ``async_to_sync`` from the test's thread runs the database reads of the body on this same
    thread, inside the test's transaction.
    """

    async def consume() -> None:
        async for chunk in response.streaming_content:
            sink(chunk)

    async_to_sync(consume)()


def body(response: StreamingHttpResponse) -> str:
    """The whole streamed body as text."""
    chunks: list[bytes] = []
    drain(response, chunks.append)
    return b"".join(chunks).decode()
