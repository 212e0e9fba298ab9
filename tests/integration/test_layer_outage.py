"""The run worker outlasts a Redis outage (issue 26): a real Redis of the test's own is killed
(``kill -9``) and revived empty on its port while the worker listens. channels' ``Worker``
let the layer's ``ConnectionError`` end its ``handle()`` (the process exited); the
:class:`OutlastingWorker` waits on the backoff ladder and receives again, and the layer it uses
joins its runs' groups again, which the empty Redis forgot."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from channels_redis.core import RedisChannelLayer
from django.core.management import get_commands, load_command_class

from apps.realtime.groups import RUN_CHANNEL, run_group
from apps.realtime.outage import LAYER_LADDER_S, Outage, OutlastingLayer
from apps.rooms.run_worker import OutlastingWorker
from tests.consumers.fake_clock import FakeClock
from tests.services.redis import RedisServer

WAIT_S = 10.0  # real seconds any one step may take on a loaded machine


@pytest.fixture
def redis() -> AsyncIterator[RedisServer]:
    with RedisServer() as server:  # the test's own: killing it spares the session's
        yield server


def layer_of(server: RedisServer) -> RedisChannelLayer:
    return RedisChannelLayer(hosts=[{"address": server.url, "socket_timeout": 30}])


def outlasting_layer(server: RedisServer, clock: FakeClock) -> OutlastingLayer:
    return OutlastingLayer(layer_of(server), outage=Outage("test worker", clock=clock,
                                                           rng=lambda: 0.5))


async def until(condition: Callable[[], bool], what: str) -> None:
    """Return once ``condition()`` holds (checked each loop turn), failing after WAIT_S."""
    async with asyncio.timeout(WAIT_S):
        while not condition():
            await asyncio.sleep(0.01)
    assert condition(), what


async def test_the_worker_listens_again_after_redis_is_killed_and_revived(
        redis: RedisServer) -> None:
    clock = FakeClock()
    heard: list[dict[str, Any]] = []

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:
            heard.append(await receive())

    layer = outlasting_layer(redis, clock)
    worker = OutlastingWorker(application, [RUN_CHANNEL], layer)
    assert worker.channel_layer is layer
    handle = asyncio.create_task(worker.handle())
    try:
        await layer_of(redis).send(RUN_CHANNEL, {"type": "run.start", "run_id": 1})
        await until(lambda: len(heard) == 1, "the first run.start")
        redis.kill()
        await until(lambda: layer.outage.down or handle.done(), "the listener sees the kill")
        assert not handle.done(), handle.exception()  # channels' Worker: ConnectionError
        await clock.sleeper(clock.now() + LAYER_LADDER_S[0])  # the listener waits, alive
        clock.advance(LAYER_LADDER_S[0])
        await clock.sleeper(clock.now() + LAYER_LADDER_S[1])  # still down: the next step
        redis.revive()
        clock.advance(LAYER_LADDER_S[1])
        # A new sender: a connection from before the kill fails its first command.
        await layer_of(redis).send(RUN_CHANNEL, {"type": "run.start", "run_id": 2})
        await until(lambda: len(heard) == 2, "the run.start sent after the outage")
    finally:
        handle.cancel()
        await asyncio.gather(handle, return_exceptions=True)
    assert [m["run_id"] for m in heard] == [1, 2]
    assert not layer.outage.down


async def test_a_run_group_joined_before_the_outage_reaches_the_worker_after_it(
        redis: RedisServer) -> None:
    clock = FakeClock()
    layer = outlasting_layer(redis, clock)
    channel = await layer.new_channel()
    await layer.group_add(run_group(7), channel)
    receiving = asyncio.create_task(layer.receive(channel))
    await asyncio.sleep(0.2)  # let the receive reach its blocking read
    redis.kill()
    await clock.sleeper(clock.now() + LAYER_LADDER_S[0])
    redis.revive()  # empty: it has forgotten the group
    clock.advance(LAYER_LADDER_S[0])
    await until(lambda: not layer.outage.down, "the rejoin after the outage")
    await layer_of(redis).group_send(run_group(7), {"type": "run.stop", "run_id": 7})
    async with asyncio.timeout(WAIT_S):
        assert await receiving == {"type": "run.stop", "run_id": 7}


async def test_a_group_joined_during_the_outage_is_joined_once_the_layer_is_back(
        redis: RedisServer) -> None:
    clock = FakeClock()
    layer = outlasting_layer(redis, clock)
    channel = await layer.new_channel()
    redis.kill()
    await layer.group_add(run_group(8), channel)  # does not raise: remembered for the rejoin
    assert layer.outage.down
    receiving = asyncio.create_task(layer.receive(channel))
    await clock.sleeper(clock.now() + LAYER_LADDER_S[1])
    redis.revive()
    clock.advance(LAYER_LADDER_S[1])
    await until(lambda: not layer.outage.down, "the rejoin after the outage")
    await layer_of(redis).group_send(run_group(8), {"type": "run.stop", "run_id": 8})
    async with asyncio.timeout(WAIT_S):
        assert await receiving == {"type": "run.stop", "run_id": 8}


def test_an_outage_is_logged_once_when_it_starts_and_once_when_it_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    outage = Outage("run worker", clock=clock, rng=lambda: 0.5)
    with caplog.at_level(logging.WARNING, logger="apps.realtime.outage"):
        waits = [outage.failed(ConnectionError("refused"), dropped=2) for _ in range(7)]
        clock.advance(12.5)
        outage.back()
        outage.back()
    assert waits == [*LAYER_LADDER_S, LAYER_LADDER_S[-1], LAYER_LADDER_S[-1]]  # rng 0.5: no jitter
    assert [r.getMessage() for r in caplog.records] == [
        "run worker: the channel layer is down (ConnectionError: refused); retrying until it "
        "is back",
        "run worker: the channel layer is back after 12.5 s (7 failed tries, 14 messages "
        "dropped)"]


def test_manage_py_runworker_runs_the_outlasting_worker() -> None:
    # apps.rooms' command wins over channels' only while it comes first in INSTALLED_APPS
    command = load_command_class(get_commands()["runworker"], "runworker")
    assert command.worker_class is OutlastingWorker
