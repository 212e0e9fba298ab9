"""The log's tail is repaired (DESIGN 3.3): the run's host sends the log's high-water mark while
the run lasts and once after it ended, and a socket whose group has been quiet reads the last
seq from the store, so a watcher has the last event of a run within 5 s of its end even when
channels-redis dropped it. Time is a :class:`FakeClock` the test advances, never a sleep."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers

from apps.accounts.models import User
from apps.realtime.broadcast import BROADCAST
from apps.realtime.groups import conversation_group
from apps.rooms.consumers import ConversationConsumer
from apps.rooms.host import RunHost
from apps.rooms.models import Conversation, Run, RunStatus
from apps.rooms.services.events import events_last_seq
from apps.rooms.tail import TailWatch
from tests.consumers.conftest import connect, script
from tests.consumers.fake_clock import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)

NEVER = 3600.0  # seconds: a mechanism the test keeps out of the way
TEXT = " ".join(f"w{i}" for i in range(80))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """One fake clock for every socket and run host of the test."""
    clock = FakeClock()
    monkeypatch.setattr(ConversationConsumer, "clock", clock)
    monkeypatch.setattr(RunHost, "clock", clock)
    return clock


def hwm(frame: dict) -> bool:
    return frame["type"] == "hwm"


# -- the rules --------------------------------------------------------------------------------


def test_a_quiet_socket_checks_only_when_it_may_have_lost_the_tail() -> None:
    clock = FakeClock()
    idle = TailWatch(clock, 3.0, run_open=False)
    clock.advance(3.0)
    assert idle.due_in() <= 0 and not idle.wants_check()  # heard nothing: nothing was dropped
    idle.heard_other()  # typing reached it: its inbox was busy, it may have overflowed
    assert idle.wants_check()
    idle.heard_log()
    assert idle.due_in() == 3.0 and not idle.wants_check()
    idle.saw("run_queued")
    assert idle.wants_check()  # a run is open: its end must arrive
    idle.saw("run_ended")
    assert not idle.wants_check()
    assert TailWatch(clock, 3.0, run_open=True).wants_check()


# -- the run's high-water marks ---------------------------------------------------------------


async def test_a_run_sends_its_high_water_mark_while_it_lasts_and_once_after_it_ends(
        settings, alice: User, conversation, worker, clock: FakeClock) -> None:
    settings.CONFAB = {**settings.CONFAB, "TAIL_CHECK_S": NEVER}  # the host's marks only
    interval = settings.CONFAB["HWM_INTERVAL_S"]
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}},
        {"text": "done"})})
    waiting = await a.until_event("awaiting_approval")  # the run waits: nothing else moves
    for _ in range(2):  # every interval
        await clock.sleeper(clock.now() + interval)
        clock.advance(interval)
        mark = await a.until(hwm)
        assert mark["seq"] == a.events[-1]["seq"] == await last_seq(conversation.pk)
    await a.send({"type": "decide", "tool_call_id": waiting["call_id"], "decision": "deny"})
    await a.until_event("run_ended")
    await clock.sleeper(clock.now() + interval)  # the host waits to send its last mark
    clock.advance(interval)
    final = await a.until(hwm)
    assert final["seq"] == a.events[-1]["seq"] == await last_seq(conversation.pk)
    await a.close()


async def last_seq(conversation_id: int) -> int:
    return await sync_to_async(events_last_seq)(conversation_id)


# -- a flood over a small channels-redis layer ------------------------------------------------

CAPACITY = 1
FLOODERS = 16  # tasks per conversation
CONVERSATIONS = 4
AFTER_END = 300  # relays still sent once the run has ended


@pytest.fixture
async def redis_layer(settings, redis_url: str) -> AsyncIterator[None]:
    """channels-redis's core layer on the session's Redis with a tiny capacity, as the default
    and as the broadcast layer: a flood of the conversation's group overflows the channel the
    process reads the group with (any layer can be the broadcast layer; this one drops)."""
    prefix = f"tail-{uuid.uuid4().hex[:8]}"
    settings.CHANNEL_LAYERS = {alias: {
        "BACKEND": "apps.realtime.core_layer.BlockingPoolRedisChannelLayer",
        "CONFIG": {"hosts": [{"address": redis_url, "socket_timeout": 30}],  # as settings
                   "capacity": CAPACITY, "prefix": f"{prefix}-{alias}"}}
        for alias in ("default", BROADCAST)}
    channel_layers.backends.clear()
    yield
    for alias in ("default", BROADCAST):
        await channel_layers[alias].flush()
        await channel_layers[alias].close_pools()


class Flood:
    """Typing relays put on the layer from ``FLOODERS`` tasks as fast as it takes them. (The
    relays a socket's typing frames become: each frame first costs its socket two database
    reads, so sockets in one process cannot send them as fast as these tasks do.)"""

    def __init__(self, conversation_id: int, person: User) -> None:
        self.group = conversation_group(conversation_id)
        self.relay = {"type": "presence.typing",
                      "user": {"id": person.pk, "name": person.shown_name}}
        self.sent = 0
        self._stop_at: int | None = None
        self._tasks = [asyncio.create_task(self._send()) for _ in range(FLOODERS)]

    async def _send(self) -> None:
        layer = channel_layers[BROADCAST]
        while self._stop_at is None or self.sent < self._stop_at:
            await layer.group_send(self.group, self.relay)
            self.sent += 1

    async def stop_after(self, more: int) -> None:
        """Send ``more`` relays still, then stop."""
        self._stop_at = self.sent + more
        await asyncio.gather(*self._tasks)

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()


async def test_every_watcher_has_the_last_seq_within_5_s_though_the_layer_dropped_it(
        settings, redis_layer: None, alice: User, carol: User, conversation, worker,
        clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    settings.CONFAB = {**settings.CONFAB, "HWM_INTERVAL_S": NEVER}  # the sockets' checks only
    caplog.set_level(logging.INFO, logger="channels_redis.core")
    # Several conversations at once: a flooded inbox drops a given last event most of the time,
    # not always; one of several almost surely.
    conversations = [conversation, *[
        await Conversation.objects.acreate(room=conversation.room, title=f"Plan {i}",
                                           created_by=alice) for i in range(1, CONVERSATIONS)]]
    watchers = [await connect(carol, c.pk) for c in conversations]
    typists = [(await connect(alice, c.pk))[0] for c in conversations]
    floods = [Flood(c.pk, alice) for c in conversations]
    try:
        for typist in typists:
            await typist.send({"type": "send", "client_id": "a1", "text": script({"text": TEXT})})
        for c in conversations:
            await run_over(c.pk)
        for flood in floods:
            await flood.stop_after(AFTER_END)  # the runs' last broadcasts met a full inbox too
        assert any("over capacity in group conv." in r.getMessage() for r in caplog.records)

        clock.advance(5.0)  # every run ended at most this long ago
        for (watcher, state), c in zip(watchers, conversations, strict=True):
            last = await last_seq(c.pk)
            await watcher.until(lambda f, last=last: f["type"] == "event" and f["seq"] == last)
            assert [f["seq"] for f in watcher.events] == list(range(state["seq"] + 1, last + 1))
            assert watcher.events[-1]["event"]["kind"] == "run_ended"
    finally:
        for flood in floods:
            flood.cancel()
        for client in (*(w for w, _ in watchers), *typists):
            if not client.ws.future.done():  # a socket that timed out is gone already
                await client.close()


async def run_over(conversation_id: int, timeout_s: float = 30) -> None:
    """Return once the conversation's run has ended in the database (polled: the sockets may
    not hear of it, which is the point)."""
    ended = Run.objects.filter(conversation_id=conversation_id).exclude(
        status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
    async with asyncio.timeout(timeout_s):
        while not await ended.aexists():
            await asyncio.sleep(0.02)
