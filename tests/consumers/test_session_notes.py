"""Session notes after the run (issue 16, item 4; DESIGN 2.6): the run ends when its answer
does; the notes agent it started finishes after it in the background, bounded in time, and
gives way to the conversation's next run. The notes agent's model requests are held at the
loopback model (a slow notes model) while the test watches the room."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Team, User
from apps.integrations.builders import provider_pool
from apps.integrations.demo import ensure_demo_models
from apps.rooms.host import RunHost
from apps.rooms.models import Conversation, Run, RunStatus
from tests.consumers.conftest import connect, script
from tests.consumers.fake_clock import FakeClock
from tests.integration.fakellm_server import RequestGate, serve_fakellm

pytestmark = pytest.mark.django_db(transaction=True)

# Eight calls in one step: the notes are due (SessionMemory's min_tool_calls) at its end.
BUSY_STEP = [{"tool_call": {"name": "Read", "arguments": {"file_path": f"missing-{n}.txt"}}}
             for n in range(8)]


@pytest.fixture
def gate() -> RequestGate:
    return RequestGate(b"You maintain the notes file")


@pytest.fixture
async def model(acme: Team, gate: RequestGate) -> AsyncIterator[str]:
    """fakellm as Acme's model, holding the notes agent's requests at ``gate``."""
    async with serve_fakellm(rate=200, gate=gate) as origin:
        await sync_to_async(ensure_demo_models)(acme, fakellm_url=origin)
        yield origin
        gate.open()
        await provider_pool.aclose_all()


async def _memory_upto(conversation: Conversation) -> int:
    return (await Conversation.objects.aget(pk=conversation.pk)).memory_upto


async def test_the_run_ends_while_its_notes_agent_works_and_the_notes_are_kept_after(
        alice: User, conversation, worker, gate: RequestGate) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(*BUSY_STEP,
                                                                    {"text": "done"})})
    ended = await a.until_event("run_ended")
    assert ended["status"] == "completed"
    await gate.until(held=1)
    run = await Run.objects.aget(conversation=conversation)
    assert run.status == RunStatus.COMPLETED and await _memory_upto(conversation) == 0
    gate.open()  # the notes agent answers: how far the notes go is stored after the end
    async with asyncio.timeout(10):
        while await _memory_upto(conversation) == 0:
            await asyncio.sleep(0.02)
    assert await _memory_upto(conversation) == 3  # alice, the calls, their results
    await a.close()


async def test_the_next_run_starts_at_once_and_cancels_the_last_runs_notes_agent(
        alice: User, bob: User, conversation, worker, gate: RequestGate) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(*BUSY_STEP,
                                                                    {"text": "done"})})
    await a.until_event("run_ended")
    await gate.until(held=1)
    await a.send({"type": "send", "client_id": "a2", "text": script({"text": "again"})})
    ack = await a.until(lambda f: f["type"] == "ack" and f["client_id"] == "a2")
    assert ack["queued"] is False  # not behind the notes agent
    await a.until_event("run_started")
    await gate.until(abandoned=1)  # the first run's notes agent gave up its request
    assert (await a.until_event("run_ended"))["status"] == "completed"
    first = await Run.objects.filter(conversation=conversation).order_by("pk").afirst()
    await gate.until(held=2)  # the second run's own notes agent (the calls are still new)
    gate.open()
    async with asyncio.timeout(10):
        while await _memory_upto(conversation) == 0:
            await asyncio.sleep(0.02)
    assert first is not None and await _memory_upto(conversation) == 6  # the second run's
    await a.close()


async def test_a_notes_agent_gets_the_timeout_after_the_end_then_is_cancelled(
        alice: User, conversation, worker, gate: RequestGate, settings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(RunHost, "clock", clock)
    settings.CONFAB = {**settings.CONFAB, "NOTES_TIMEOUT_S": 30.0}
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(*BUSY_STEP,
                                                                    {"text": "done"})})
    await a.until_event("run_ended")
    await gate.until(held=1)
    await clock.sleeper(clock.now() + 30.0)
    clock.advance(29.0)
    await asyncio.sleep(0.1)
    assert gate.abandoned == 0
    clock.advance(1.0)
    await gate.until(abandoned=1)
    gate.open()
    await asyncio.sleep(0.2)
    assert await _memory_upto(conversation) == 0  # cancelled: the next run's steps redo it
    await a.close()


@pytest.mark.parametrize(("setting", "step"), [  # each with the other out of reach
    ({"NOTES_MIN_TOKENS": 1, "NOTES_MIN_TOOL_CALLS": 10**9}, [{"text": "a short answer"}]),
    ({"NOTES_MIN_TOOL_CALLS": 2, "NOTES_MIN_TOKENS": 10**9}, BUSY_STEP[:2]),
], ids=["tokens", "tool calls"])
async def test_how_often_the_notes_agent_runs_is_a_setting(
        alice: User, conversation, worker, gate: RequestGate, settings,
        setting: dict[str, int], step: list[dict[str, object]]) -> None:
    settings.CONFAB = {**settings.CONFAB, **setting}  # the defaults leave this run's notes be
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(*step, {"text": "done"})})
    await a.until_event("run_ended")
    await gate.until(held=1)
    gate.open()
    async with asyncio.timeout(10):
        while await _memory_upto(conversation) == 0:
            await asyncio.sleep(0.02)
    await a.close()
