"""The offline model's ``sources`` step (issue 17): fakellm cites pages in each protocol's own
wire form (Anthropic ``citations_delta``, OpenAI-compatible ``url_citation`` annotations,
Gemini ``groundingMetadata``), the real adapters surface them and the message keeps them; the
in-process scripted provider gives the same sources."""

from __future__ import annotations

import pytest

from apps.engine.messages import ChatRequest
from apps.engine.providers import provider_class
from apps.engine.providers.assembler import MessageAssembler
from apps.engine.providers.base import ProviderSettings
from apps.engine.providers.script import parse_script
from apps.engine.providers.scripted import ScriptedProvider
from apps.engine.sources import sources
from tests.integration.fakellm_server import serve_fakellm
from tests.integration.test_fakellm_runs import MODELS, PROTOCOLS, base_url, script
from tests.unit.engine.runtime_kit import user

CITED = [{"url": "https://example.org/a", "title": "Page A"},
         {"url": "https://docs.example.com/b", "title": "Page B"}]
EXPECTED = [{"title": "Page A", "site": "example.org", "url": "https://example.org/a"},
            {"title": "Page B", "site": "docs.example.com", "url": "https://docs.example.com/b"}]
SCRIPT = script({"text": "Here is what I found."}, {"sources": CITED}, {"text": " More."})


async def _assembled(provider, protocol: str) -> MessageAssembler:
    assembler = MessageAssembler(protocol)  # type: ignore[arg-type]
    request = ChatRequest(model=MODELS[protocol], messages=[user(SCRIPT)])
    async for event in provider.stream_chat(request):
        assembler.feed(event)
    return assembler


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_fakellm_cites_in_each_wire_format(protocol: str) -> None:
    async with serve_fakellm(rate=0) as origin:
        settings = ProviderSettings(protocol=protocol, base_url=base_url(protocol, origin),
                                    api_key="fake-key", read_timeout_s=10)
        async with provider_class(protocol)(settings) as adapter:
            assembler = await _assembled(adapter, protocol)
    message = assembler.message()
    assert message.text() == "Here is what I found. More."
    assert sources(message.content) == EXPECTED
    if protocol == "gemini":
        assert assembler.grounding_metadata == {"groundingChunks": [
            {"web": {"uri": s["url"], "title": s["title"]}} for s in CITED]}
    else:
        assert len(assembler.citations) == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_scripted_provider_gives_the_same_sources(protocol: str) -> None:
    assembler = await _assembled(ScriptedProvider(protocol=protocol), protocol)
    assert sources(assembler.message().content) == EXPECTED


def test_a_malformed_sources_step_is_not_a_script() -> None:
    assert parse_script(script({"sources": [{"title": "no url"}]})) is None
    assert parse_script(script({"sources": "https://example.org"})) is None
    assert parse_script(SCRIPT) is not None
