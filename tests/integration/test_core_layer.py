"""The core channel layer waits for a free connection instead of failing a burst (a Daphne
whose sockets all close at once: each consumer's ``group_discard`` takes a connection)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from channels_redis.core import RedisChannelLayer
from redis.exceptions import MaxConnectionsError

from apps.realtime.core_layer import (
    POOL_MAX_CONNECTIONS,
    POOL_TIMEOUT_S,
    BlockingPoolRedisChannelLayer,
)

POOL = 4
BURST = 60


def layer_of(cls: type[RedisChannelLayer], redis_url: str, **host: object
             ) -> RedisChannelLayer:
    return cls(hosts=[{"address": redis_url, "socket_timeout": 30, **host}],
               prefix=f"core-{uuid.uuid4().hex[:8]}")


async def joins_and_leaves(layer: RedisChannelLayer) -> list[str]:
    """BURST channels join a group at once, one message reaches them all, they leave at once;
    the channels that received it."""
    channels = [await layer.new_channel() for _ in range(BURST)]
    await asyncio.gather(*(layer.group_add("room-1", c) for c in channels))
    await layer.group_send("room-1", {"type": "room.note", "text": "hi"})
    got = await asyncio.gather(*(layer.receive(c) for c in channels))
    await asyncio.gather(*(layer.group_discard("room-1", c) for c in channels))
    return [c for c, message in zip(channels, got, strict=True) if message["text"] == "hi"]


async def test_a_burst_larger_than_the_pool_waits_for_connections(redis_url: str) -> None:
    layer = layer_of(BlockingPoolRedisChannelLayer, redis_url, max_connections=POOL)
    try:
        assert len(await joins_and_leaves(layer)) == BURST
        pool = layer.connection(0).connection_pool
        assert pool.max_connections == POOL
        assert len(pool._available_connections) + len(pool._in_use_connections) <= POOL
        # the group is empty again: a message to it reaches nobody
        assert await layer.connection(0).zcard(layer._group_key("room-1")) == 0
    finally:
        await layer.close_pools()


async def test_channels_redis_own_pool_fails_the_same_burst(redis_url: str) -> None:
    """Why the layer exists: the stock pool raises at once past its size."""
    layer = layer_of(RedisChannelLayer, redis_url, max_connections=POOL)
    try:
        with pytest.raises(MaxConnectionsError):
            await joins_and_leaves(layer)
    finally:
        await layer.close_pools()


async def test_the_pool_defaults_to_redis_py_size_and_a_timeout(redis_url: str) -> None:
    layer = layer_of(BlockingPoolRedisChannelLayer, redis_url)
    try:
        pool = layer.connection(0).connection_pool
        assert pool.max_connections == POOL_MAX_CONNECTIONS
        assert pool.timeout == POOL_TIMEOUT_S
        assert pool.connection_kwargs["socket_timeout"] == 30  # the rest of the host kept
    finally:
        await layer.close_pools()
