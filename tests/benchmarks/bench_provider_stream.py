"""The run worker's CPU per streamed token of a provider's stream, layer by layer: a bare socket
(the floor), the HTTP client (httpx2 on aiohttp, as the providers use it) and the whole provider
(confab's SSE decoder, JSON, the Anthropic translator and its well-formedness check).

Run with ``make bench`` or ``.venv/bin/python -m tests.benchmarks.bench_provider_stream``
(``--help`` for the knobs). fakellm runs in its own process on 127.0.0.1 at 50 tokens/s, as in
``bench_fanout``, and streams one text of ``--tokens`` words per request, one SSE event per word;
this process opens ``--streams`` of them at once on uvloop (the run worker's loop) and reads
each to its end:

- socket: an ``asyncio.Protocol`` that counts the reads of the raw response (chunked body,
  SSE and all): the event loop's and the kernel's cost of a read, nothing parsed;
- httpx2: ``httpx2.AsyncClient.stream`` over :class:`~apps.engine.providers.aiohttp_transport.
  AiohttpTransport` and ``Response.aiter_bytes``: the HTTP client as the providers use it;
- provider: ``AnthropicProvider.stream_chat``, the events a run gets.

Each is timed in the process's CPU time (fakellm's is not counted) per token streamed, the
three taking turns in each of ``--rounds`` rounds, and each keeps its median. It prints the
figures and the ratios: the client over the floor, and what the provider adds over the client.
On the 2-core machine (issue 20), 64 streams: about 13 µs per token at the socket, 37-40
through httpx2 and 48-52 as the provider's events on httpcore2 (the transport before aiohttp);
on aiohttp, in a slower hour, socket 17.8, httpx2 43.8, provider 56.6 (the client 2.46x the
floor, against 2.61x); in the slowest hour yet (bench_fanout's fakellm at 85-92 µs per token),
socket 26.8, httpx2 68.9, provider 84.6 (2.57x; the provider's own code 15.7). Here the loop
is idle between tokens, so each token is a read of its own; aiohttp's gain is larger in
bench_fanout's worker, busy enough that several tokens wait for one read (7-10 % of the
worker's CPU per token there).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx2
import uvloop

from apps.engine.messages import ChatRequest, Message
from apps.engine.providers.aiohttp_transport import AiohttpTransport
from apps.engine.providers.anthropic import AnthropicProvider
from apps.engine.providers.base import HttpCall, ProviderSettings
from tests.e2e.harness import http_ok
from tests.services.procs import LOOPBACK, free_port, orphan_guard, wait_until

RATE = 50.0  # tokens/s, as bench_fanout's fakellm


def request_for(tokens: int) -> ChatRequest:
    """A request fakellm answers with ``tokens`` words, one SSE event each."""
    script = json.dumps({"script": [{"text": " ".join(f"w{i}" for i in range(tokens))}]})
    return ChatRequest(model="scripted", messages=[Message(role="user", content=script)])


async def read_socket(call: HttpCall) -> int:
    """The raw response's reads, counted until the server closes (``Connection: close``)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    reads = 0

    class Counting(asyncio.Protocol):
        def data_received(self, data: bytes) -> None:
            nonlocal reads
            reads += 1

        def connection_lost(self, exc: Exception | None) -> None:
            done.set_result(None)

    url = urlsplit(call.url)
    body = json.dumps(call.body).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in call.headers.items())
    transport, _ = await loop.create_connection(Counting, url.hostname, url.port)
    transport.write(f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nConnection: close\r\n"
                    f"Content-Length: {len(body)}\r\n{head}\r\n".encode() + body)
    await done
    return reads


async def read_httpx2(client: httpx2.AsyncClient, call: HttpCall) -> int:
    """The response body's chunks as ``aiter_bytes`` gives them."""
    chunks = 0
    async with client.stream("POST", call.url, json=call.body, headers=call.headers) as response:
        async for _ in response.aiter_bytes():
            chunks += 1
    return chunks


async def read_provider(provider: AnthropicProvider, request: ChatRequest) -> int:
    """The provider's normalized events."""
    events = 0
    async for _ in provider.stream_chat(request):
        events += 1
    return events


async def cpu_per_token(streams: int, tokens: int, one: Callable[[], Awaitable[int]]) -> float:
    """CPU µs per streamed token of ``streams`` concurrent ``one()`` reads."""
    start = time.process_time()
    await asyncio.gather(*(one() for _ in range(streams)))
    return (time.process_time() - start) / (streams * tokens) * 1e6


async def measure(url: str, streams: int, tokens: int, rounds: int) -> dict[str, float]:
    provider = AnthropicProvider(ProviderSettings(protocol="anthropic", base_url=url,
                                                  api_key="bench"))
    request = request_for(tokens)
    call = provider.build_call(request)
    client = httpx2.AsyncClient(transport=AiohttpTransport(), timeout=60)
    layers: dict[str, Callable[[], Awaitable[int]]] = {
        "socket": lambda: read_socket(call),
        "httpx2": lambda: read_httpx2(client, call),
        "provider": lambda: read_provider(provider, request),
    }
    figures: dict[str, list[float]] = {name: [] for name in layers}
    try:
        for one in layers.values():  # warm: connections, imports, caches
            await asyncio.gather(*(one() for _ in range(4)))
        for round_ in range(rounds):
            for name, one in layers.items():
                figures[name].append(await cpu_per_token(streams, tokens, one))
                print(f"  round {round_ + 1}: {name:8s} {figures[name][-1]:6.1f} µs/token",
                      flush=True)
    finally:  # the provider's client too: left open, aiohttp warns of an unclosed session
        await client.aclose()
        await provider.aclose()
    return {name: statistics.median(values) for name, values in figures.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.bench_provider_stream",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=64, help="concurrent streams")
    parser.add_argument("--tokens", type=int, default=200, help="tokens per stream")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    port = free_port()
    url = f"http://{LOOPBACK}:{port}"
    fakellm = subprocess.Popen(
        [*orphan_guard(), sys.executable, "-m", "apps.engine.fakellm", "--host", LOOPBACK,
         "--port", str(port), "--rate", str(RATE)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: http_ok(url + "/health"), timeout=30, what="fakellm", proc=fakellm)
        print(f"{args.streams} streams x {args.tokens} tokens at {RATE:.0f} tokens/s, "
              f"{args.rounds} rounds (CPU µs per token, this process only):", flush=True)
        figures = uvloop.run(measure(url, args.streams, args.tokens, args.rounds))
    finally:
        fakellm.terminate()
        fakellm.wait(10)
    floor, client, ours = figures["socket"], figures["httpx2"], figures["provider"]
    print(f"\nmedians: socket {floor:.1f}  httpx2 {client:.1f}  provider {ours:.1f} µs/token")
    print(f"httpx2 / socket {client / floor:.2f}x; provider / httpx2 {ours / client:.2f}x "
          f"(the provider's own code: {ours - client:.1f} µs/token)")


if __name__ == "__main__":
    main()
