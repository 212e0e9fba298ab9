"""PostgreSQL restarted mid-run (issue 26): the session's cluster is shut down (fast
shutdown: every connection closed) while a run streams, stays down ``DOWN_S`` seconds and starts
again on the same port and data directory (:meth:`PostgresServer.start_again`);
:func:`tests.chaos.outage.outage` says what is checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tests.chaos.live import deploy
from tests.chaos.outage import outage
from tests.chaos.table import Row
from tests.e2e.harness import ProcessStack
from tests.services.postgres import PostgresServer

pytestmark = pytest.mark.e2e

DOWN_S = 2.0


def test_postgres_restarted_mid_run(e2e_stack: ProcessStack, postgres_server: PostgresServer,
                                    chaos_row: Callable[..., Row]) -> None:
    app = deploy(e2e_stack, servers=2, workers=1, rate=50)
    row = chaos_row("PostgreSQL restarted", f"fast shutdown of PostgreSQL mid-run, down "
                                            f"{DOWN_S:.0f} s, started again on its port")
    asyncio.run(outage(app, row, down=postgres_server.shut_down,
                       up=postgres_server.start_again, down_s=DOWN_S))
