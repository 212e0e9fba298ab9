"""channels-redis's core layer on connection pools that wait for a free connection.

redis-py's asyncio ``ConnectionPool`` holds at most ``max_connections`` connections (100 by
default since redis-py 6) and raises ``MaxConnectionsError`` at once when a command finds them
all in use. channels-redis builds its pools that way, so a Daphne whose sockets close together
(a meeting ends, a load balancer drains, the fan-out benchmark's 320 watchers) had each of its
consumers' ``group_discard`` take a connection at the same moment: past the hundredth, the
consumer raised "Too many connections", its disconnect stopped half-way, and Daphne printed a
traceback for each (bench_fanout, 64 x 5: 150 of them per step). ``MaxConnectionsError`` is a
``redis.exceptions.ConnectionError``, so the broadcasts took it for an outage
(:mod:`apps.realtime.outage`) and dropped messages while Redis was fine.

redis-py's ``BlockingConnectionPool`` is the same pool that waits: a command that finds every
connection busy waits for one to come back (``timeout`` seconds, then ``ConnectionError``), so
a burst is served as connections free up instead of failing. The wait is not first come, first
served (a task that gives a connection back and asks again may get it first), so a pool held
busy for the whole timeout still fails its waiters; confab's layer users hold a connection for
one command or a short pipeline, and a process's receives share one blocking read.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio
from channels_redis.core import RedisChannelLayer

__all__ = ["POOL_MAX_CONNECTIONS", "POOL_TIMEOUT_S", "BlockingPoolRedisChannelLayer"]

POOL_MAX_CONNECTIONS = 100
"""Connections per pool, redis-py's own default for a pool that does not wait."""

POOL_TIMEOUT_S = 5.0
"""Seconds a command waits for a free connection before ``ConnectionError``: shorter than
Daphne's ``application_close_timeout`` (10 s), so a disconnect's ``group_discard`` that cannot
be served fails where it is logged instead of being cancelled unseen (redis-py's own default
is 20 s)."""


class BlockingPoolRedisChannelLayer(RedisChannelLayer):
    """``channels_redis.core.RedisChannelLayer`` whose pools are redis-py's
    ``BlockingConnectionPool``; the same ``CONFIG``, where a host may also set
    ``max_connections`` and ``timeout`` (seconds). A Sentinel host (``master_name``) keeps
    channels-redis's pool."""

    def create_pool(self, index: int) -> Any:
        host = dict(self.hosts[index])
        if "master_name" in host:
            return super().create_pool(index)
        host.setdefault("max_connections", POOL_MAX_CONNECTIONS)
        host.setdefault("timeout", POOL_TIMEOUT_S)
        address = host.pop("address", None)
        pool = redis.asyncio.BlockingConnectionPool
        return pool.from_url(address, **host) if address else pool(**host)
