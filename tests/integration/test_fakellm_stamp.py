"""fakellm's ``--stamp`` (for ``tests/benchmarks/bench_fanout``): each streamed text or thinking
piece starts with ``⟦<time.time()>⟧``, the moment its frame left the server, in all three wire
formats; without the flag nothing changes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import uvicorn

from apps.engine.events import ReasoningDeltaEvent, TextDelta
from apps.engine.fakellm.app import create_app
from apps.engine.fakellm.wire import ENCODERS, STAMP_RE, stamp_frame, stamps
from apps.engine.providers import provider_class
from apps.engine.providers.base import ProviderSettings
from apps.engine.runtime.runner import RunConfig
from tests.unit.engine.runtime_kit import runner, user

PROTOCOLS = ["anthropic", "openai", "gemini"]
MODELS = {"anthropic": "claude-fake", "openai": "gpt-fake", "gemini": "gemini-2.5-flash"}
RATE = 100.0  # tokens/s: 10 ms between pieces
WORDS = "one two three four five six"


@contextlib.asynccontextmanager
async def serve(rate: float, stamp: bool) -> AsyncIterator[str]:
    """fakellm in this event loop on 127.0.0.1 (as tests/integration/fakellm_server.py does,
    with ``stamp``); yields its origin URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(rate=rate, stamp=stamp),
                                           log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


def script(*steps: dict) -> str:
    return json.dumps({"script": list(steps)})


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_each_streamed_piece_carries_its_send_time(protocol: str, tmp_path: Path) -> None:
    async with serve(rate=RATE, stamp=True) as origin:
        settings = ProviderSettings(protocol=protocol, api_key="k", read_timeout_s=10,
                                    base_url=origin + "/v1" if protocol == "openai" else origin)
        async with provider_class(protocol)(settings) as provider:
            history = [user(script({"thinking": "let me see"}, {"text": WORDS}))]
            before = time.time()
            received: list[tuple[str, str, float]] = []  # (kind, text, received at)
            run = runner(provider, [], history, tmp_path,
                         config=RunConfig(model=MODELS[protocol]))  # type: ignore[arg-type]
            async for event in run.events():
                if isinstance(event, TextDelta | ReasoningDeltaEvent):
                    received.append((event.kind, event.text, time.time()))
    texts = [text for kind, text, _ in received if kind == "text_delta"]
    assert len(texts) == len(WORDS.split())
    sent: list[float] = []
    for _kind, text, at in received:
        (when,) = stamps(text)  # one piece, one stamp, at its start
        assert text.startswith("⟦") and before <= when <= at
        sent.append(when)
    # Stamped when sent, after the pacing pause: the stamps are ~1/RATE apart.
    gaps = [b - a for a, b in zip(sent, sent[1:], strict=False)]
    assert min(gaps) > 0.5 / RATE
    # The text without its stamps is the script's text.
    assert STAMP_RE.sub("", "".join(texts)) == WORDS
    assert STAMP_RE.sub("", history[-1].text()) == WORDS
    assert stamps(history[-1].text()) == sent[-len(texts):]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_without_the_flag_nothing_is_stamped(protocol: str) -> None:
    frames = list(ENCODERS[protocol]([{"thinking": "hm"}, {"text": WORDS}], None, "m", 1))
    assert not any(b"stamp" in frame.data for frame in frames)
    assert [stamp_frame(frame.data) for frame in frames] == [frame.data for frame in frames]


def test_the_placeholder_becomes_the_time_and_reads_back() -> None:
    frames = [f for f in ENCODERS["anthropic"]([{"text": "a b"}], None, "m", 1, stamp=True)
              if f.token]
    stamped = [stamp_frame(f.data, now=1732950000.123456) for f in frames]
    pieces = [json.loads(data.decode().split("data: ", 1)[1])["delta"]["text"]
              for data in stamped]
    assert pieces == ["⟦1732950000.123456⟧a", "⟦1732950000.123456⟧ b"]
    assert stamps("".join(pieces)) == [1732950000.123456, 1732950000.123456]
