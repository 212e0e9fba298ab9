"""channels-redis's pub/sub layer with many group messages in one command (issue 20).

The run worker's log writer broadcasts every conversation whose flush joined a write, a few
dozen group messages every ``COALESCE_MS``. The layer's ``group_send`` is one ``PUBLISH`` and
one round trip each, under the shard connection's lock, so a write's messages went to Redis one
after another: a socket write, a read of the reply and the event loop's turn in between, each
(bench_fanout: a tenth of the worker's main thread in ``sendmsg`` alone). :meth:`group_send_many`
sends them as one command instead (a few for a batch over :data:`COMMAND_BYTES` or
:data:`COMMAND_MESSAGES`): a Lua script that ``PUBLISH``es each message, in the order given,
so a conversation's events still reach its group in ``seq`` order. A pipeline of ``PUBLISH``es
(one write, one read) still cost redis-py a packed command and a parsed reply per message: 64
messages took 1.2 ms of the sender's CPU, the script 0.28 ms (``EVALSHA``, one reply; Redis
runs scripts since 2.6, and ``PUBLISH`` is allowed in them).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from typing import Any

from channels_redis.pubsub import RedisPubSubChannelLayer
from redis.exceptions import NoScriptError

__all__ = ["BatchedPubSubChannelLayer"]


class BatchedPubSubChannelLayer(RedisPubSubChannelLayer):
    """``channels_redis.pubsub.RedisPubSubChannelLayer`` plus :meth:`group_send_many`; the
    same ``CONFIG``, wire format and delivery (at most once)."""

    async def group_send_many(self, sends: list[tuple[str, dict[str, Any]]]) -> None:
        """``group_send(group, message)`` for each ``(group, message)``, in order, as one
        command per shard (:data:`PUBLISH_EACH`; a large batch as a few). Raises what redis-py
        raises (``redis.exceptions.ConnectionError`` while Redis is down); some messages may
        have been published then."""
        layer = self._get_layer()  # the event loop's own connections
        by_shard: dict[Any, list[tuple[str, bytes]]] = {}
        for group, message in sends:
            channel = layer._get_group_channel_name(group)
            by_shard.setdefault(layer._get_shard(channel), []).append(
                (channel, self.serialize(message)))
        if len(by_shard) == 1:  # one Redis (the usual): no task to gather
            ((shard, items),) = by_shard.items()
            await _publish(shard, items)
        else:
            await asyncio.gather(*(_publish(shard, items) for shard, items in by_shard.items()))


PUBLISH_EACH = ("for i = 1, #ARGV, 2 do redis.call('PUBLISH', ARGV[i], ARGV[i + 1]) end "
                "return #ARGV / 2")
"""The script: ``PUBLISH ARGV[i] ARGV[i + 1]`` for each pair of arguments, in order (channels
are not keys: the script declares none)."""
_PUBLISH_EACH_SHA = hashlib.sha1(PUBLISH_EACH.encode()).hexdigest()

COMMAND_BYTES = 1024 * 1024
"""At most this much data per script call (a larger message goes alone). While a script runs
Redis writes to no subscriber, so a whole call piles up in each subscriber's output buffer;
one over the ``pubsub`` limit (32 MiB by default) disconnected a subscriber that was keeping
up, and its batch was lost. Between calls Redis writes to the subscribers, as it did between
the PUBLISHes of a pipeline. (A subscriber that stops reading still falls behind past the
limit, whoever publishes.)"""
COMMAND_MESSAGES = 1000
"""At most this many messages per script call: Redis runs nothing else while a script runs."""


async def _publish(shard: Any, items: list[tuple[str, bytes]]) -> None:
    """``PUBLISH`` each ``(channel, data)`` on one shard, in order, a command per
    :func:`_commands` slice: ``EVALSHA`` of :data:`PUBLISH_EACH`, or ``EVAL`` when Redis has
    not cached the script (its first use since Redis started, or after ``SCRIPT FLUSH``;
    ``EVAL`` caches it). Under the shard's lock, like its own ``publish``: its subscribe and
    flush hold it too."""
    async with shard._lock:
        shard._ensure_redis()
        redis = shard._redis
        for arguments in _commands(items):
            try:
                await redis.evalsha(_PUBLISH_EACH_SHA, 0, *arguments)
            except NoScriptError:
                await redis.eval(PUBLISH_EACH, 0, *arguments)


def _commands(items: list[tuple[str, bytes]]) -> Iterator[list[str | bytes]]:
    """``items`` as the arguments of consecutive script calls (``channel, data, channel,
    data...``), each within :data:`COMMAND_BYTES` and :data:`COMMAND_MESSAGES`."""
    arguments: list[str | bytes] = []
    size = 0
    for channel, data in items:
        if arguments and (size + len(data) > COMMAND_BYTES
                          or len(arguments) >= 2 * COMMAND_MESSAGES):
            yield arguments
            arguments, size = [], 0
        arguments += (channel, data)
        size += len(data)
    if arguments:
        yield arguments
