"""fakellm's transport faults (silent, reset, truncate) through the real adapters over real
HTTP, in all three wire formats: each is a classified ``stream_interrupted`` ProviderError after
the text before it, and the retry ladder retries it only while nothing has been said."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ChatStreamEvent, ContentDelta, Retrying
from apps.engine.messages import ChatRequest, Message
from apps.engine.providers import provider_class
from apps.engine.providers.base import HttpProvider, ProviderSettings
from apps.engine.providers.retry import RetryingProvider
from tests.integration.fakellm_server import serve_fakellm
from tests.integration.test_fakellm_runs import MODELS, PROTOCOLS, base_url
from tests.unit.engine.runtime_kit import user

FAULTS = ["silent", "reset", "truncate"]
# How each fault reaches the adapter: the read timeout, httpx's error for a body cut off
# mid-chunk, the translator's own check for the missing terminal event.
CAUSE = {"silent": "timed out (ReadTimeout)", "reset": "RemoteProtocolError", "truncate": "ended"}
SILENCE_S = 0.5  # the silence a client allows: what ends a silent stream
# Every other test waits longer: on a loaded machine the server's close of a reset connection
# once came after 0.5 s, and the reset was read as a timeout.
READ_TIMEOUT_S = 30.0


@pytest.fixture(params=PROTOCOLS)
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[HttpProvider]:
    protocol = request.param
    callspec = getattr(request.node, "callspec", None)
    silent = callspec is not None and callspec.params.get("fault") == "silent"
    async with serve_fakellm(rate=0) as origin:
        settings = ProviderSettings(protocol=protocol, base_url=base_url(protocol, origin),
                                    api_key="fake-key",
                                    read_timeout_s=SILENCE_S if silent else READ_TIMEOUT_S)
        async with provider_class(protocol)(settings) as adapter:
            yield adapter


def request(provider: HttpProvider, *steps: dict) -> ChatRequest:
    history: list[Message] = [user(json.dumps({"script": list(steps)}))]
    return ChatRequest(model=MODELS[provider.protocol], messages=history)


async def collect(stream: AsyncIterator[ChatStreamEvent], into: list[ChatStreamEvent]) -> None:
    async for event in stream:
        into.append(event)


def text(events: list[ChatStreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ContentDelta))


async def no_wait(seconds: float) -> None:
    return None


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_fault_after_text_is_a_stream_interruption(provider: HttpProvider,
                                                           fault: str) -> None:
    events: list[ChatStreamEvent] = []
    retrying = RetryingProvider(provider, sleep=no_wait)
    with pytest.raises(ProviderError) as raised:
        await collect(retrying.stream_chat(request(provider, {"text": "said once"},
                                                   {"error": {"fault": fault}},
                                                   {"text": " never"})), events)
    assert raised.value.kind == ErrorKind.STREAM_INTERRUPTED, raised.value.message
    assert CAUSE[fault] in raised.value.message
    assert text(events) == "said once"  # not retried: a retry would say it twice
    assert not [e for e in events if isinstance(e, Retrying)]


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_fault_before_any_text_is_retried(provider: HttpProvider, fault: str) -> None:
    events: list[ChatStreamEvent] = []
    retrying = RetryingProvider(provider, sleep=no_wait)
    await collect(retrying.stream_chat(request(provider, {"error": {"fault": fault}},
                                               {"text": "back again"})), events)
    [notice] = [e for e in events if isinstance(e, Retrying)]
    # network: Gemini sends no preamble chunk, so nothing had arrived yet
    assert notice.kind in ("stream_interrupted", "network")
    assert text(events) == "back again"


async def test_an_unknown_fault_is_refused_before_the_stream(provider: HttpProvider) -> None:
    with pytest.raises(ProviderError) as raised:
        await collect(provider.stream_chat(request(provider, {"error": {"fault": "melt"}})), [])
    assert raised.value.kind == ErrorKind.INVALID_REQUEST
    assert "unknown fault 'melt'" in raised.value.message


async def test_a_reset_leaves_the_server_serving(provider: HttpProvider) -> None:
    with pytest.raises(ProviderError) as raised:
        await collect(provider.stream_chat(request(provider, {"error": {"fault": "reset"}})), [])
    assert CAUSE["reset"] in raised.value.message
    events: list[ChatStreamEvent] = []
    await collect(provider.stream_chat(request(provider, {"text": "still here"})), events)
    assert text(events) == "still here"
