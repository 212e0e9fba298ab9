"""Redis killed and revived mid-run (issue 26): the session's Redis is ``kill -9``-ed while
a run streams, stays down ``DOWN_S`` seconds and comes back on the same port, empty
(:meth:`RedisServer.revive`); the channel layer must reconnect, the run worker outlast the outage
(:mod:`apps.rooms.run_worker`) and the run go on (:func:`tests.chaos.outage.outage` says what is
checked).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tests.chaos.live import deploy
from tests.chaos.outage import outage
from tests.chaos.table import Row
from tests.e2e.harness import ProcessStack
from tests.services.redis import RedisServer

pytestmark = pytest.mark.e2e

DOWN_S = 2.0


def test_redis_killed_mid_run(e2e_stack: ProcessStack, redis_server: RedisServer,
                              chaos_row: Callable[..., Row]) -> None:
    app = deploy(e2e_stack, servers=2, workers=1, rate=50)
    row = chaos_row("Redis killed", f"kill -9 of Redis mid-run, down {DOWN_S:.0f} s, revived "
                                    "on its port (empty)")
    asyncio.run(outage(app, row, down=redis_server.kill, up=redis_server.revive,
                       down_s=DOWN_S))
