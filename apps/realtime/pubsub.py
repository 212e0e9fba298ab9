"""channels-redis's pub/sub layer with many group messages in one round trip (issue 20).

The run worker's log writer broadcasts every conversation whose flush joined a write, a few
dozen group messages every ``COALESCE_MS``. The layer's ``group_send`` is one ``PUBLISH`` and
one round trip each, under the shard connection's lock, so a write's messages went to Redis one
after another: a socket write, a read of the reply and the event loop's turn in between, each
(bench_fanout: a tenth of the worker's main thread in ``sendmsg`` alone). :meth:`group_send_many`
pipelines them instead (redis-py's ``pipeline(transaction=False)``): one write and one read
per shard, the messages published in the order given, so a conversation's events still reach
its group in ``seq`` order.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels_redis.pubsub import RedisPubSubChannelLayer

__all__ = ["PipelinedPubSubChannelLayer"]


class PipelinedPubSubChannelLayer(RedisPubSubChannelLayer):
    """``channels_redis.pubsub.RedisPubSubChannelLayer`` plus :meth:`group_send_many`; the
    same ``CONFIG``, wire format and delivery (at most once)."""

    async def group_send_many(self, sends: list[tuple[str, dict[str, Any]]]) -> None:
        """``group_send(group, message)`` for each ``(group, message)``, in order, as one
        pipeline per shard. Raises what redis-py raises (``redis.exceptions.ConnectionError``
        while Redis is down); some messages may have been published then."""
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


async def _publish(shard: Any, items: list[tuple[str, bytes]]) -> None:
    """``PUBLISH`` each ``(channel, data)`` on one shard: one write, one read of the replies.
    Under the shard's lock, like its own ``publish``: its subscribe and flush hold it too."""
    async with shard._lock:
        shard._ensure_redis()
        pipe = shard._redis.pipeline(transaction=False)
        for channel, data in items:
            pipe.publish(channel, data)
        await pipe.execute()
