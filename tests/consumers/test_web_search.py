"""Web search and sources through the full host path (issue 17, DESIGN 2.3): a member turns the
model's search control on with ``configure``, the run's request asks the provider for its own
search (Anthropic's ``web_search`` server tool, Gemini's ``google_search`` beside the function
tools, Qwen's ``enable_search``, OpenRouter's web plugin), and the recorded search streams of
../shared/fixtures/providers, served over loopback, end as numbered sources on the message: in
``message_ended``, the state frame, the REST page and both exports."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.test import AsyncClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from apps.accounts.models import User
from apps.integrations.models import ModelConfig, ProviderConfig
from apps.rooms.models import Conversation
from tests.conftest import FIXTURES
from tests.consumers.conftest import Client, connect
from tests.unit.engine.mcp.kit import serve_app

pytestmark = pytest.mark.django_db(transaction=True)

NPR = {"title": "News: U.S. and World News Headlines : NPR", "site": "npr.org",
       "url": "https://www.npr.org/sections/news/"}
WUNDERGROUND = {"title": "San Francisco, CA Hourly Weather Forecast | Weather Underground",
                "site": "wunderground.com",
                "url": "https://www.wunderground.com/hourly/us/ca/san-francisco"}
GOOGLE = {"title": "Weather information for San Francisco, CA, US", "site": "google.com",
          "url": "https://www.google.com/search?q=weather+in+San%20Francisco,%20CA,+US"}
PYDANTIC = {"title": "Pydantic AI", "site": "ai.pydantic.dev", "url": "https://ai.pydantic.dev"}
POPULATION = {"title": "populationstat.com", "site": "populationstat.com",
              "url": "https://populationstat.com/united-states/san-francisco"}


@dataclass
class Recorded:
    """A provider endpoint on loopback that answers every request with one recorded stream
    and keeps the request bodies."""

    stream: Path
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def app(self) -> Starlette:
        async def answer(request: Request) -> StreamingResponse:
            self.bodies.append(json.loads(await request.body()))
            return StreamingResponse(iter([self.stream.read_bytes()]),
                                     media_type="text/event-stream")
        return Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])


@dataclass(frozen=True)
class Case:
    kind: str
    profile: str
    fixture: str
    reasoning: dict[str, Any]
    first_sources: list[dict[str, str]]
    count: int


CASES = {
    "anthropic": Case("anthropic", "", "anthropic/web-search-citations.sse",
                      {"enabled_search": True}, [NPR], 7),
    "anthropic-2": Case("anthropic", "", "anthropic/web-search-citations-2.sse",
                        {"enabled_search": True}, [WUNDERGROUND], 0),
    "gemini-search": Case("gemini", "", "gemini/google-search-grounding.sse",
                          {"enabled_search": True}, [GOOGLE], 0),
    "gemini-url-context": Case("gemini", "", "gemini/url-context-grounding.sse",
                               {"url_context": True}, [PYDANTIC], 1),
    "perplexity": Case("openai", "", "openai-compatible/perplexity-citations.sse",
                       {"enabled_search": True}, [POPULATION], 7),
    "qwen": Case("openai", "qwen", "openai-compatible/perplexity-citations.sse",
                 {"enabled_search": True}, [POPULATION], 7),
    "openrouter": Case("openai", "openrouter", "openai-compatible/perplexity-citations.sse",
                       {"enabled_search": True}, [POPULATION], 7),
}


def _asked_for_search(case: Case, body: dict[str, Any]) -> None:
    """The request asked the provider for its own search, in the provider's words."""
    tools = body.get("tools", [])
    if case.kind == "anthropic":
        assert {"type": "web_search_20250305", "name": "web_search"} in tools
        assert any(t.get("name") == "Bash" for t in tools)  # the client tools stay
    elif case.kind == "gemini":
        wanted = "google_search" if case.reasoning.get("enabled_search") else "url_context"
        assert {wanted: {}} in tools and any("functionDeclarations" in t for t in tools)
        assert body["toolConfig"] == {"includeServerSideToolInvocations": True}
    elif case.profile == "qwen":
        assert body["enable_search"] is True
    elif case.profile == "openrouter":
        assert body["plugins"] == [{"id": "web"}]


@pytest.fixture(params=sorted(CASES))
async def searcher(request: pytest.FixtureRequest, model: str
                   ) -> AsyncIterator[tuple[Case, Recorded, ModelConfig]]:
    """One case's provider on loopback and its model, declaring the search controls."""
    case = CASES[request.param]
    recorded = Recorded(FIXTURES / case.fixture)
    async with serve_app(recorded.app()) as origin:
        provider = await ProviderConfig.objects.acreate(
            name=f"Recorded {request.param}", kind=case.kind, profile=case.profile,
            base_url=origin + ("/v1" if case.kind == "openai" else ""), api_key="sk-test")
        searching = await ModelConfig.objects.acreate(
            provider=provider, model_id="gemini-2.5-pro" if case.kind == "gemini" else "m1",
            display_name="Searcher", extend_params=["enabled_search", "url_context"])
        yield case, recorded, searching


async def _run(client: Client, searching: ModelConfig, reasoning: dict[str, Any]
               ) -> dict[str, Any]:
    """Choose the model with ``reasoning``, ask, wait for the end; the answer's
    ``message_ended`` event."""
    await client.send({"type": "configure", "model": searching.pk, "reasoning": reasoning})
    await client.until_event("settings_changed")
    await client.send({"type": "send", "client_id": "q1", "text": "what is new?"})
    ended = await client.until_event("run_ended")
    assert ended["status"] == "completed", ended
    return next(f["event"] for f in client.events if f["event"]["kind"] == "message_ended"
                and f["event"]["message"]["role"] == "assistant")


async def test_search_is_asked_for_and_the_sources_reach_the_room_and_the_exports(
        alice: User, conversation: Conversation, worker: None,
        searcher: tuple[Case, Recorded, ModelConfig]) -> None:
    case, recorded, searching = searcher
    client, _ = await connect(alice, conversation.pk)
    answer = await _run(client, searching, case.reasoning)
    _asked_for_search(case, recorded.bodies[0])
    found = answer["sources"]
    assert found[: len(case.first_sources)] == case.first_sources
    if case.count:
        assert len(found) == case.count
    assert all(s["url"].startswith(("https://", "http://")) for s in found)
    await client.close()

    again, state = await connect(alice, conversation.pk)
    assert state["messages"][-1]["sources"] == found
    await again.close()
    http = AsyncClient()
    await http.aforce_login(alice)
    base = f"/api/conversations/{conversation.pk}"
    page = json.loads((await http.get(f"{base}/messages")).content)
    assert page["messages"][-1]["sources"] == found
    exported = json.loads(await _body(await http.get(f"{base}/export.json")))
    assert exported["messages"][-1]["sources"] == found
    markdown = (await _body(await http.get(f"{base}/export.md"))).decode()
    first = case.first_sources[0]
    assert f"**Sources**\n\n1. [{_md(first['title'])}](<{first['url']}>) — {first['site']}" \
        in markdown


async def _body(response: Any) -> bytes:
    return b"".join([piece async for piece in response.streaming_content])


def _md(text: str) -> str:
    """``text`` escaped as the Markdown export escapes a title."""
    return "".join(f"\\{c}" if c in "\\`*_[]<>|#" else c for c in text)
