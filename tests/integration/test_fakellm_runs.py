"""Full runs of the real adapters over real HTTP against the fakellm server, in all three wire
formats: a tool round trip, an injected message, cancellations, reactive compaction, retries."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from apps.engine.compaction.auto_compact import Compactor
from apps.engine.events import ContentDelta, TextDelta
from apps.engine.messages import Message
from apps.engine.providers import provider_class
from apps.engine.providers.base import HttpProvider, ProviderSettings
from apps.engine.providers.retry import RetryingProvider
from apps.engine.providers.scripted import OFFLINE_REPLY
from apps.engine.runtime.runner import RunConfig
from tests.integration.fakellm_server import fakellm_process, serve_fakellm
from tests.unit.engine.runtime_kit import (
    Blocker,
    Echo,
    Inbox,
    assert_every_call_answered,
    runner,
    user,
)

PROTOCOLS = ["anthropic", "openai", "gemini"]
MODELS = {"anthropic": "claude-fake", "openai": "gpt-fake", "gemini": "gemini-2.5-flash"}


def base_url(protocol: str, origin: str) -> str:
    return origin + "/v1" if protocol == "openai" else origin


@pytest.fixture(params=PROTOCOLS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[HttpProvider]:
    protocol = request.param
    async with serve_fakellm(rate=0) as origin:
        settings = ProviderSettings(protocol=protocol, base_url=base_url(protocol, origin),
                                    api_key="fake-key", read_timeout_s=10)
        async with provider_class(protocol)(settings) as adapter:
            yield adapter


def script(*steps: dict) -> str:
    return json.dumps({"script": list(steps)})


def config(provider: HttpProvider, **kw: object) -> RunConfig:
    return RunConfig(model=MODELS[provider.protocol], **kw)  # type: ignore[arg-type]


async def test_a_tool_round_trip_with_thinking(provider: HttpProvider, tmp_path: Path) -> None:
    echo = Echo()
    history = [user(script({"thinking": "I should echo."}, {"text": "Let me look."},
                           {"tool_call": {"name": "Echo", "arguments": {"text": "ping"}}},
                           {"text": "Echo said ping."}))]
    events = await runner(provider, [echo], history, tmp_path, config=config(provider)).run()
    assert events[-1].status == "completed", events[-2:]
    assert echo.calls == ["ping"]
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    first = history[1]
    assert first.text() == "Let me look." and first.tool_calls()[0].input == {"text": "ping"}
    assert first.provider == provider.protocol
    if provider.protocol == "openai":
        assert first.reasoning_content == "I should echo."
    else:
        assert first.content[0].type == "thinking"
    if provider.protocol == "anthropic":
        assert first.content[0].signature  # sent back on the second request, accepted
    if provider.protocol == "gemini":
        assert first.tool_calls()[0].thought_signature
    assert history[-1].text() == "Echo said ping."


class PostOnFirstText:
    """Passes the real provider's events through; when the first text arrives — the model is
    mid-stream, inside the run's own task — bob posts a message."""

    def __init__(self, inner: HttpProvider, inbox: Inbox) -> None:
        self.inner, self.inbox, self.protocol = inner, inbox, inner.protocol

    async def stream_chat(self, request):  # type: ignore[no-untyped-def]
        async for event in self.inner.stream_chat(request):
            if isinstance(event, ContentDelta) and len(request.messages) == 1 \
                    and not self.inbox.pending:
                self.inbox.post("bob", "and also this")
            yield event


async def test_a_message_injected_mid_stream_is_answered_at_the_next_step(
        provider: HttpProvider, tmp_path: Path) -> None:
    inbox = Inbox()
    history = [user(script({"text": "one two three four five"}))]
    tapped = PostOnFirstText(provider, inbox)
    run = runner(tapped, [], history, tmp_path, inbox=inbox, config=config(provider))
    await run.run()
    assert [(m.role, m.text()) for m in history] == [
        ("user", history[0].text()), ("assistant", "one two three four five"),
        ("user", "and also this"), ("assistant", OFFLINE_REPLY)]
    assert run.status == "completed"


async def test_stop_while_streaming_then_the_next_run_sends_the_history(
        provider: HttpProvider, tmp_path: Path) -> None:
    async with serve_fakellm(rate=200) as slow_origin:  # slow enough to stop mid-way
        settings = ProviderSettings(protocol=provider.protocol, api_key="k",
                                    base_url=base_url(provider.protocol, slow_origin))
        async with provider_class(provider.protocol)(settings) as slow:
            history = [user(script({"text": " ".join(f"word{i}" for i in range(200))}))]
            run = runner(slow, [], history, tmp_path, config=config(provider))
            async for event in run.events():
                if isinstance(event, TextDelta) and event.text.strip() == "word2":
                    run.cancel()
    assert run.status == "cancelled"
    partial = history[-1]
    assert partial.status == "cancelled" and partial.text().startswith("word0 word1 word2")
    assert "word199" not in partial.text()
    history.append(user(script({"text": "still here"})))
    await runner(provider, [], history, tmp_path, config=config(provider)).run()
    assert history[-1].text() == "still here"


async def test_stop_while_a_tool_runs_then_the_next_run_sends_the_history(
        provider: HttpProvider, tmp_path: Path) -> None:
    blocker = Blocker()
    history = [user(script({"tool_call": {"name": "Blocker", "arguments": {}}},
                           {"text": "never"}))]
    run = runner(provider, [blocker], history, tmp_path, config=config(provider))

    async def stop() -> None:
        await blocker.started.wait()
        run.cancel()

    helper = asyncio.create_task(stop())
    await run.run()
    await helper
    assert blocker.cancelled and run.status == "cancelled"
    assert_every_call_answered(history)
    history.append(user(script({"text": "recovered"})))
    events = await runner(provider, [], history, tmp_path, config=config(provider)).run()
    assert events[-1].status == "completed" and history[-1].text() == "recovered"


async def test_prompt_too_long_compacts_and_retries_once(provider: HttpProvider,
                                                        tmp_path: Path) -> None:
    history = [user("hello"), Message(role="assistant", content="hi there"),
               user(script({"error": {"status": 400, "message":
                                      "prompt is too long: 250000 tokens > 200000 maximum"}},
                           {"text": "fits now"}))]
    compactor = Compactor(provider, MODELS[provider.protocol], context_window=200_000,
                          max_output=8_000)
    events = await runner(provider, [], history, tmp_path, compactor=compactor,
                          config=config(provider)).run()
    compacted = [e for e in events if e.kind == "compacted"]
    assert [e.reason for e in compacted] == ["reactive"]
    assert compacted[0].summary == OFFLINE_REPLY  # the summary call went through fakellm too
    assert events[-1].status == "completed" and history[-1].text() == "fits now"
    assert history[0].text().startswith("[Summary of the earlier conversation")


async def test_an_overloaded_provider_is_retried_with_a_notice(provider: HttpProvider,
                                                               tmp_path: Path) -> None:
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)

    retrying = RetryingProvider(provider, sleep=no_wait)
    history = [user(script({"error": {"status": 529, "retry_after": 0}}, {"text": "back"}))]
    events = await runner(retrying, [], history, tmp_path, config=config(provider)).run()
    [notice] = [e for e in events if e.kind == "retrying"]
    assert (notice.error_kind, notice.attempt, notice.delay_s) == ("overloaded", 1, 0.0)
    assert waits == [0.0] and history[-1].text() == "back"


async def test_an_in_stream_error_after_text_fails_the_run(provider: HttpProvider,
                                                          tmp_path: Path) -> None:
    history = [user(script({"text": "partial answer"},
                           {"error": {"status": 529, "in_stream": True}}))]
    events = await runner(provider, [], history, tmp_path, config=config(provider)).run()
    assert events[-1].status == "failed" and events[-1].error_kind == "overloaded"
    assert history[-1].status == "error" and history[-1].text() == "partial answer"


async def test_the_model_list_comes_from_the_server(provider: HttpProvider) -> None:
    models = await provider.list_models()
    assert "confab-offline" in [m.id for m in models]


def test_the_server_runs_as_a_command() -> None:
    with fakellm_process() as origin:
        body = {"model": "m", "max_tokens": 100, "stream": True,
                "messages": [{"role": "user", "content": script({"text": "hi there"})}]}
        response = httpx2.post(f"{origin}/v1/messages", json=body, timeout=10)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert '"text_delta", "text": "hi"' in response.text
    assert "event: message_stop" in response.text
