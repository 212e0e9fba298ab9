"""A run worker killed mid-tool-call (issue 26): two Daphne, a run worker, Redis, PostgreSQL,
fakellm. The model calls Bash (``sleep 30``); once it is approved and running, the worker is
``kill -9``-ed. The run ends ``interrupted`` (the sweeper notices the stale heartbeat), the
person's message is kept, and both sockets are seq-exact with the store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from tests.chaos.live import (
    Deployment,
    Socket,
    catch_up,
    count_sockets,
    deploy,
    export,
    script,
    store_seq,
)
from tests.chaos.table import Row
from tests.e2e.harness import ProcessStack

pytestmark = pytest.mark.e2e


def test_a_worker_killed_mid_tool_call_leaves_an_interrupted_run(
        e2e_stack: ProcessStack, chaos_row: Callable[..., Row]) -> None:
    app = deploy(e2e_stack, servers=2, workers=1, rate=200)
    row = chaos_row("run worker killed", "kill -9 of the worker while Bash runs")
    asyncio.run(_scenario(app, row))


async def _scenario(app: Deployment, row: Row) -> None:
    sockets = [Socket(server, app.conversation, app.token()) for server in app.servers]
    for socket in sockets:
        await socket.open()
    alice, other = sockets
    await alice.send({"type": "send", "client_id": "tool-run", "text": script(
        {"tool_call": {"name": "Bash", "arguments": {"command": "sleep 30"}}},
        {"text": "done"})})
    async with asyncio.timeout(60):  # a read-only command may run without approval
        while (kind := (await alice.next()).get("event", {}).get("kind")) != "tool_started":
            if kind == "awaiting_approval":
                await alice.send({"type": "decide", "decision": "approve",
                                  "tool_call_id": alice.events[-1]["event"]["call_id"]})
    await asyncio.to_thread(app.stack.kill, app.workers[0])
    killed = time.monotonic()
    ended = [await s.until("run_ended", timeout=60) for s in sockets]
    row.recover_s = time.monotonic() - killed
    row.interrupted = sum(e["status"] == "interrupted" for e in ended)
    row.completed = sum(e["status"] == "completed" for e in ended)
    row.failed = len(ended) - row.interrupted - row.completed
    last = await store_seq(app.servers[1], app.conversation, app.token())
    await catch_up(sockets, last)
    count_sockets(row, sockets, last)
    exported = await export(app.servers[1], app.conversation, app.token())
    row.messages_lost = int(not any(m.get("client_id") == "tool-run"
                                    for m in exported["messages"]))
    row.notes.append("runs column: the run's end as each socket saw it (interrupted is right); "
                     "recover s: kill to run_ended on both sockets")
    for socket in sockets:
        await socket.close()
    assert row.interrupted == len(sockets), ended
    assert row.sockets_repaired == len(sockets) and row.messages_lost == 0
    assert row.deltas_duplicated == row.deltas_missing == 0
