"""The broadcast layer's ``group_send_many`` on a real Redis (issue 20): every message reaches
its group's subscribers, each group's in the order given, as ``group_send`` would deliver them
one by one, in one command (a script Redis caches, loaded again when its cache was emptied;
a few for a large batch); and while Redis is down it raises, for the caller to drop them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import pytest
import redis.asyncio
from redis.exceptions import ConnectionError as RedisConnectionError

from apps.realtime.pubsub import BatchedPubSubChannelLayer
from tests.services.redis import RedisServer

Layers = tuple[BatchedPubSubChannelLayer, BatchedPubSubChannelLayer, str]
"""A sender's layer, a receiver's, and the receiver's channel."""


def layer_on(url: str) -> BatchedPubSubChannelLayer:
    return BatchedPubSubChannelLayer(hosts=[{"address": url, "socket_timeout": 30}])


async def heard(layer: BatchedPubSubChannelLayer, channel: str, count: int) -> list[str]:
    return [(await asyncio.wait_for(layer.receive(channel), 10))["text"] for _ in range(count)]


async def test_each_group_hears_its_messages_in_the_order_given(redis_url: str) -> None:
    sender, receiver = layer_on(redis_url), layer_on(redis_url)  # two processes' layers
    every, only_b = await receiver.new_channel(), await receiver.new_channel()
    for group in ("pipe.a", "pipe.b", "pipe.c"):
        await receiver.group_add(group, every)
    await receiver.group_add("pipe.b", only_b)
    sends = [(f"pipe.{group}", {"type": "x", "text": f"{group}{i}"})
             for i in range(40) for group in "abc"]
    try:
        await sender.group_send_many(sends)
        got = await heard(receiver, every, len(sends))
        assert [t for t in got if t[0] == "a"] == [f"a{i}" for i in range(40)]
        assert [t for t in got if t[0] == "b"] == [f"b{i}" for i in range(40)]
        assert sorted(got) == sorted(message["text"] for _, message in sends)
        assert await heard(receiver, only_b, 40) == [f"b{i}" for i in range(40)]
    finally:
        await sender.flush()
        await receiver.flush()


async def test_while_redis_is_down_it_raises() -> None:
    with RedisServer() as server:  # the test's own: killing it spares the session's
        layer = layer_on(server.url)
        await layer.group_send_many([("pipe.a", {"type": "x", "text": "up"})])
        server.kill()
        with pytest.raises((RedisConnectionError, OSError)):
            await layer.group_send_many([("pipe.a", {"type": "x", "text": "down"})])
        await layer.flush()


async def commands(url: str) -> dict[str, int]:
    """Redis's count of calls per command (``INFO commandstats``)."""
    client = redis.asyncio.Redis.from_url(url)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    return {name.removeprefix("cmdstat_"): int(row["calls"]) for name, row in stats.items()}


@pytest.fixture
async def own_redis() -> AsyncIterator[tuple[str, Layers]]:
    """A Redis of the test's own (the commands it counts are the test's alone) with a sender's
    and a receiver's layer on it, and the receiver's channel in the group ``batch``."""
    with RedisServer() as server:
        sender, receiver = layer_on(server.url), layer_on(server.url)
        channel = await receiver.new_channel()
        await receiver.group_add("batch", channel)
        try:
            yield server.url, (sender, receiver, channel)
        finally:
            await sender.flush()
            await receiver.flush()


async def test_a_batch_is_one_command_and_survives_an_emptied_script_cache(
        own_redis: tuple[str, Layers]) -> None:
    url, (sender, receiver, channel) = own_redis
    client = redis.asyncio.Redis.from_url(url)
    try:
        await client.script_flush()  # as after a restart: EVALSHA answers NOSCRIPT
    finally:
        await client.aclose()
    await sender.group_send_many([("batch", {"type": "x", "text": "first"})])
    before = await commands(url)
    await sender.group_send_many([("batch", {"type": "x", "text": f"m{i}"}) for i in range(50)])
    after = await commands(url)
    assert await heard(receiver, channel, 51) == ["first", *(f"m{i}" for i in range(50))]
    sent = {name: after[name] - before.get(name, 0) for name in after
            if name in ("evalsha", "eval") and after[name] != before.get(name, 0)}
    assert sent == {"evalsha": 1}  # the 50 PUBLISHes ran inside the cached script


async def test_a_large_batch_goes_as_several_commands_that_a_subscriber_keeps_up_with(
        ) -> None:
    """40 MiB in one script call would pile up past a subscriber's output buffer limit (32
    MiB) while the script runs: Redis would disconnect it and the batch would be lost. So a
    batch goes as commands of about 1 MiB (COMMAND_BYTES), here 10 batches of 4 MiB. The
    subscriber reads on its own event loop, as another process's would, and each batch is
    sent once it heard the last: how fast a subscriber reads under load is the machine's, not
    the layer's, and this test is about what one command holds."""
    big = [("batch", {"type": "x", "text": f"{i:03}" + "x" * 100_000}) for i in range(400)]
    small = [("batch", {"type": "x", "text": f"s{i}"}) for i in range(2500)]
    with RedisServer() as server:  # the test's own: the commands it counts are its alone
        sender = layer_on(server.url)
        with Subscriber(server.url, "batch", 1 + len(big) + len(small)) as subscriber:
            await sender.group_send_many([("batch", {"type": "x", "text": "warm"})])
            before = await commands(server.url)
            for start in range(0, len(big), 40):
                await sender.group_send_many(big[start:start + 40])
                await asyncio.to_thread(subscriber.until, 1 + start + 40, 30)
            middle = await commands(server.url)
            await sender.group_send_many(small)
            after = await commands(server.url)
            got = await asyncio.to_thread(subscriber.heard, 30)
        await sender.flush()
    assert [t[:3] for t in got[1:401]] == [f"{i:03}" for i in range(400)]
    assert got[401:] == [f"s{i}" for i in range(2500)]
    assert 38 <= middle["evalsha"] - before["evalsha"] <= 41  # ~39 MiB, COMMAND_BYTES a call
    assert after["evalsha"] - middle["evalsha"] == 3  # COMMAND_MESSAGES a call


class Subscriber:
    """A layer in a thread with its own event loop, in ``group``, reading ``count`` messages
    from the moment the block starts."""

    def __init__(self, url: str, group: str, count: int) -> None:
        self.url, self.group, self.count = url, group, count
        self.texts: list[str] = []
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="subscriber", daemon=True)

    def __enter__(self) -> Subscriber:
        self._thread.start()
        if not self._ready.wait(10):
            raise TimeoutError("the subscriber did not join its group")
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join(60)

    def until(self, count: int, timeout_s: float) -> None:
        """Wait until ``count`` texts are read (raises what the reading raised)."""
        deadline = time.monotonic() + timeout_s
        while len(self.texts) < count and self.error is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.error is not None:
            raise self.error

    def heard(self, timeout_s: float) -> list[str]:
        """The texts read, once all ``count`` are (raises what the reading raised)."""
        self._thread.join(timeout_s)
        if self.error is not None:
            raise self.error
        return self.texts

    def _run(self) -> None:
        try:
            asyncio.run(self._read())
        except BaseException as exc:  # handed to heard()
            self.error = exc

    async def _read(self) -> None:
        layer = layer_on(self.url)
        try:
            channel = await layer.new_channel()
            await layer.group_add(self.group, channel)
            self._ready.set()
            for _ in range(self.count):
                self.texts.append((await asyncio.wait_for(layer.receive(channel), 10))["text"])
        finally:
            await layer.flush()
