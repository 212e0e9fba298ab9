"""A pooled server's questions and list changes reach the right runs (issue 24): two runs of
one team share server-everything's connection, a third team has its own; an elicitation goes
to the run whose call asked, none other; one no run can be named for is declined; a prompts
list change reaches every run on that connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from apps.engine.events import McpListChanged, RuntimeEvent
from apps.engine.mcp import ElicitationAnswer, ElicitationRequest, McpManager, McpServerSpec
from apps.engine.mcp.pool import McpPool, ServerKey
from tests.consumers.fake_clock import FakeClock
from tests.unit.engine.mcp.kit import call, everything_spec, http_spec, serve_http, wait_until
from tests.unit.engine.mcp.py_server import build_server

ASK = "mcp__everything__trigger-elicitation-request"
ACME = ServerKey(team=1, server=7)
GLOBEX = ServerKey(team=2, server=7)  # the same catalog server, enabled by another team


class Answers:
    """A run's answerer: accepts with a name and records what it was asked."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[ElicitationRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.asked.append(request)
        return ElicitationAnswer(action="accept", content={"name": self.name},
                                 answered_by=self.name)


class Run:
    """One run's side: its answerer, the events its manager emitted, its manager."""

    def __init__(self, name: str) -> None:
        self.answers = Answers(name)
        self.events: list[RuntimeEvent] = []
        self.mcp: McpManager


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    pool = McpPool(idle_timeout_s=60, max_processes=4, sandbox="off", clock=FakeClock(),
                   allow_private_network=True)
    yield pool
    await pool.aclose()


async def _enter(stack: AsyncExitStack, pool: McpPool, key: ServerKey, spec: McpServerSpec,
                 name: str) -> Run:
    run = Run(name)
    run.mcp = await stack.enter_async_context(McpManager(
        [spec], keys=[key], pool=pool, elicitation=run.answers, on_event=run.events.append))
    return run


def _text(output: object) -> str:
    content = output.content  # type: ignore[attr-defined]
    return content if isinstance(content, str) else "".join(
        getattr(b, "text", "") for b in content)


async def test_a_pooled_servers_question_goes_to_the_run_whose_call_asked(
        pool: McpPool, tmp_path: Path) -> None:
    spec = everything_spec()
    async with AsyncExitStack() as stack:
        ada = await _enter(stack, pool, ACME, spec, "Ada")
        bob = await _enter(stack, pool, ACME, spec, "Bob")
        eve = await _enter(stack, pool, GLOBEX, spec, "Eve")
        assert pool.size() == 2  # Acme's two runs share one server; Globex has its own

        assert "- Name: Bob" in _text(await call(bob.mcp.registry, ASK, tmp_path))
        assert "- Name: Ada" in _text(await call(ada.mcp.registry, ASK, tmp_path))

        assert [len(r.answers.asked) for r in (ada, bob, eve)] == [1, 1, 0]
        assert [e.kind for e in ada.events] == ["awaiting_elicitation", "elicitation_answered"]
        assert [e.kind for e in bob.events] == ["awaiting_elicitation", "elicitation_answered"]
        assert eve.events == []


async def test_a_question_while_two_runs_have_calls_in_flight_is_declined(
        pool: McpPool, tmp_path: Path) -> None:
    """On 2025-11-25 over stdio nothing links the question to a call: with two runs' calls in
    flight on the connection, neither run is asked."""
    spec = everything_spec()
    async with AsyncExitStack() as stack:
        ada = await _enter(stack, pool, ACME, spec, "Ada")
        bob = await _enter(stack, pool, ACME, spec, "Bob")
        assert bob.mcp.status()[0].protocol_version == "2025-11-25"
        shared = pool_connection(bob.mcp)
        slow = asyncio.create_task(call(bob.mcp.registry,
                                        "mcp__everything__trigger-long-running-operation",
                                        tmp_path, duration=2, steps=1))
        await wait_until(lambda: shared.calls.caller() is bob.mcp, what="Bob's call in flight")

        text = _text(await call(ada.mcp.registry, ASK, tmp_path))
        await slow

    assert "decline" in text.lower()
    assert ada.answers.asked == [] and bob.answers.asked == []
    assert ada.events == [] and bob.events == []


def pool_connection(manager: McpManager) -> object:
    """The pooled connection behind the manager's first MCP tool."""
    return manager.tools()[0].server.connection  # type: ignore[attr-defined]


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
async def test_a_pooled_servers_prompt_change_reaches_each_run_using_it(
        pool: McpPool, transport: str, tmp_path: Path) -> None:
    async with serve_http(build_server(), transport) as url, AsyncExitStack() as stack:
        spec = http_spec("py", url, transport)
        ada = await _enter(stack, pool, ACME, spec, "Ada")
        bob = await _enter(stack, pool, ACME, spec, "Bob")
        await call(ada.mcp.registry, "mcp__py__add_prompt", tmp_path, name="晚安")
        changed = McpListChanged(server="py", list="prompts")
        await wait_until(lambda: changed in ada.events and changed in bob.events,
                         what="the prompts list_changed event in both runs")
        assert "晚安" in {p.name for p in await bob.mcp.prompts()}
