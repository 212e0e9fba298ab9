"""The worker's pulse (issue 20): one heartbeat UPDATE for all its runs, ticks that flush only
the projectors whose deltas are due (a slow flush holds back no other), one pass of high-water
marks for every watched conversation, and no timer left once the last run is gone."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from apps.accounts.models import User
from apps.realtime.broadcast import broadcast_layer
from apps.realtime.groups import conversation_group
from apps.rooms.models import Conversation, Run, RunStatus
from apps.rooms.pulse import Pulse
from tests.consumers.fake_clock import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)


class FakeProjector:
    """What the pulse uses of a projector: its ids, ``tick_due`` and ``tick`` (here counted,
    and held until ``release`` is set when ``slow``)."""

    def __init__(self, conversation_id: int, *, slow: bool = False, due: bool = True) -> None:
        self.conversation_id = conversation_id
        self.run_id = conversation_id
        self.due = due
        self.slow = slow
        self.release = asyncio.Event()
        self.ticks = 0

    def tick_due(self) -> bool:
        return self.due

    async def tick(self) -> None:
        self.ticks += 1
        if self.slow:
            await self.release.wait()


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement run from here on, in any thread."""
    seen: list[str] = []
    execute = CursorWrapper._execute

    def recorded(self: CursorWrapper, sql: str, *args: object) -> object:
        seen.append(sql)
        return execute(self, sql, *args)

    monkeypatch.setattr(CursorWrapper, "_execute", recorded)
    return seen


async def _listening(conversation: Conversation, alice: User) -> tuple[int, dict[int, str]]:
    """A second conversation in ``conversation``'s room; the two get last seqs 7 and 4 and a
    channel each in their groups: ``(the second's pk, {pk: channel})``."""
    other = await Conversation.objects.acreate(room_id=conversation.room_id, title="Other",
                                               created_by=alice)
    layer, channels = broadcast_layer(), {}
    for pk, seq in ((conversation.pk, 7), (other.pk, 4)):
        await Conversation.objects.filter(pk=pk).aupdate(last_seq=seq)
        channels[pk] = await layer.new_channel()
        await layer.group_add(conversation_group(pk), channels[pk])
    return other.pk, channels


async def _marks(channels: dict[int, str]) -> dict[int, object]:
    """The next message each channel hears: ``{pk: message}``."""
    layer = broadcast_layer()
    return {pk: await asyncio.wait_for(layer.receive(channel), 5)
            for pk, channel in channels.items()}


@pytest.fixture
def fast(settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "HEARTBEAT_S": 0.05, "COALESCE_MS": 10.0,
                       "HWM_INTERVAL_S": 2.0}


async def test_one_update_beats_every_run_and_the_timer_stops_with_the_last(
        settings, conversation: Conversation, alice: User, statements: list[str]) -> None:
    long_ago = timezone.now() - timedelta(hours=1)
    runs = []
    for title in ("a", "b", "c"):  # one active run per conversation
        hosted = await Conversation.objects.acreate(room_id=conversation.room_id, title=title,
                                                    created_by=alice)
        runs.append(await Run.objects.acreate(conversation=hosted, started_by=alice,
                                              status=RunStatus.RUNNING, heartbeat_at=long_ago))
    settings.CONFAB = {**settings.CONFAB, "HEARTBEAT_S": 0.2}  # no second beat meanwhile
    pulse = Pulse()
    with pulse.beating(runs[0].pk), pulse.beating(runs[1].pk):
        async with asyncio.timeout(5):
            while not any(sql.startswith("UPDATE") for sql in statements):  # the first beat
                await asyncio.sleep(0.01)
    assert pulse._beat.task is None  # the last run left: no timer
    assert len([sql for sql in statements if sql.startswith("UPDATE")]) == 1  # for both
    stamps = [(await Run.objects.aget(pk=run.pk)).heartbeat_at for run in runs]
    assert stamps[0] > long_ago and stamps[1] > long_ago and stamps[2] == long_ago


async def test_a_tick_flushes_the_due_projectors_and_a_slow_one_holds_back_no_other(
        settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "COALESCE_MS": 10_000.0}
    pulse = Pulse()
    settings.CONFAB = {**settings.CONFAB, "COALESCE_MS": 10.0}  # read at each tick
    slow, quick, idle = FakeProjector(1, slow=True), FakeProjector(2), FakeProjector(3, due=False)
    with pulse.watching(slow), pulse.watching(quick), pulse.watching(idle):
        await asyncio.sleep(0.15)  # some fifteen ticks
        assert slow.ticks == 1  # still flushing: not flushed again meanwhile
        assert quick.ticks >= 2 and idle.ticks == 0
        slow.release.set()
        await asyncio.sleep(0.05)
        assert slow.ticks >= 2
    assert pulse._tick.task is None and pulse._mark.task is None


async def test_every_watched_conversation_gets_its_mark_in_one_pass(
        fast, conversation: Conversation, alice: User, statements: list[str]) -> None:
    other, channels = await _listening(conversation, alice)
    clock = FakeClock()
    pulse = Pulse(clock)
    projectors = [FakeProjector(conversation.pk, due=False), FakeProjector(other, due=False)]
    statements.clear()
    with pulse.watching(projectors[0]), pulse.watching(projectors[1]):
        await clock.sleeper(clock.now() + 2.0)
        clock.advance(2.0)
        marks = await _marks(channels)
    assert marks == {conversation.pk: {"type": "conv.hwm", "seq": 7},
                     other: {"type": "conv.hwm", "seq": 4}}
    assert len([sql for sql in statements if "last_seq" in sql]) == 1


async def test_a_failed_beat_is_logged_and_the_next_one_still_comes(
        fast, conversation: Conversation, alice: User, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    run = await Run.objects.acreate(conversation=conversation, started_by=alice,
                                    status=RunStatus.RUNNING,
                                    heartbeat_at=timezone.now() - timedelta(hours=1))
    failures = iter([RuntimeError("database down")])
    real = Pulse._beat_all

    async def flaky(self: Pulse) -> None:
        error = next(failures, None)
        if error is not None:
            raise error
        await real(self)

    monkeypatch.setattr(Pulse, "_beat_all", flaky)
    pulse = Pulse()
    before = run.heartbeat_at
    with pulse.beating(run.pk):
        async with asyncio.timeout(5):  # a failed beat, then one that writes
            while (await sync_to_async(Run.objects.get)(pk=run.pk)).heartbeat_at == before:
                await asyncio.sleep(0.02)
    assert "the worker's heartbeat failed" in caplog.text


async def test_an_ended_runs_last_mark_joins_the_pass_an_interval_on_and_then_the_timer_stops(
        fast, conversation: Conversation, alice: User, statements: list[str]) -> None:
    ended, channels = await _listening(conversation, alice)
    layer = broadcast_layer()
    clock = FakeClock()
    pulse = Pulse(clock)
    watched = FakeProjector(conversation.pk, due=False)
    with pulse.watching(watched):
        await clock.sleeper(clock.now() + 2.0)
        clock.advance(1.0)
        pulse.mark_after_end(ended)  # due at 3.0: not in the pass at 2.0
        clock.advance(1.0)
        assert await asyncio.wait_for(layer.receive(channels[conversation.pk]), 5) == {
            "type": "conv.hwm", "seq": 7}
        with pytest.raises(TimeoutError):  # the same batch would have brought it
            await asyncio.wait_for(layer.receive(channels[ended]), 0.2)
        await clock.sleeper(clock.now() + 2.0)
        statements.clear()
        clock.advance(2.0)
        marks = await _marks(channels)
    assert marks == {conversation.pk: {"type": "conv.hwm", "seq": 7},
                     ended: {"type": "conv.hwm", "seq": 4}}
    assert len([sql for sql in statements if "last_seq" in sql]) == 1  # one query for both
    assert pulse._mark.task is None  # nothing more to mark once the run's projector is gone

    pulse.mark_after_end(ended)  # no run left: the timer starts again for this mark alone
    await clock.sleeper(clock.now() + 2.0)
    clock.advance(2.0)
    assert await asyncio.wait_for(layer.receive(channels[ended]), 5) == {
        "type": "conv.hwm", "seq": 4}
    for _ in range(100):
        if pulse._mark.task is None or pulse._mark.task.done():
            break
        await asyncio.sleep(0.01)
    assert pulse._mark.task is None  # it stopped itself after that mark
    with pytest.raises(TimeoutError):  # and nothing more came
        await asyncio.wait_for(layer.receive(channels[ended]), 0.2)
