"""A Daphne killed with 50 sockets open (issue 26): two Daphne, a run worker, Redis,
PostgreSQL, fakellm. 25 sockets on each server watch one run; mid-stream the first server is
``kill -9``-ed. Its 25 sockets reconnect to the other with the last seq they saw
(docs/protocol.md, Connecting: ``?after_seq=N``) and resume: at the run's end every socket is
seq-exact with the store, and the streamed text equals the stored text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
import websockets

from tests.chaos.live import (
    Deployment,
    Socket,
    delta_faults,
    deploy,
    export,
    script,
    seq_exact,
    store_seq,
    stored_text,
    streamed_text,
)
from tests.chaos.table import Row
from tests.e2e.harness import ProcessStack

pytestmark = pytest.mark.e2e

SOCKETS = 50
LONG = " ".join(f"word{i}" for i in range(300))


def test_fifty_sockets_resume_seq_exact_on_the_other_server(
        e2e_stack: ProcessStack, chaos_row: Callable[..., Row]) -> None:
    app = deploy(e2e_stack, servers=2, workers=1, rate=100)
    row = chaos_row("Daphne killed", f"kill -9 of 1 of 2 Daphne with {SOCKETS // 2} of "
                                     f"{SOCKETS} sockets on it, mid-run")
    asyncio.run(_scenario(app, row))


async def _scenario(app: Deployment, row: Row) -> None:
    doomed, survivor = app.servers
    sockets = [Socket(app.servers[i % 2], app.conversation, app.token(("alice", "bob")[i % 2]))
               for i in range(SOCKETS)]
    await asyncio.gather(*(s.open() for s in sockets))
    killed_at: list[float] = []
    resumed: list[float] = []

    async def follow(socket: Socket) -> dict:
        while True:
            try:
                return await socket.until("run_ended", timeout=120)
            except (websockets.ConnectionClosed, OSError):
                await socket.open(survivor)  # resumes after its last seq
                resumed.append(time.monotonic())

    await sockets[0].send({"type": "send", "client_id": "long-run",
                           "text": script({"text": LONG})})
    followers = [asyncio.create_task(follow(s)) for s in sockets]
    async with asyncio.timeout(60):
        while not all(any(f["event"]["kind"] == "text_delta" for f in s.events)
                      for s in sockets):
            await asyncio.sleep(0.05)
    killed_at.append(time.monotonic())
    await asyncio.to_thread(app.stack.kill, doomed)
    ended = await asyncio.gather(*followers)
    last = await store_seq(survivor, app.conversation, app.token())
    for socket in sockets:  # the tail check brings any last event
        async with asyncio.timeout(30):
            while socket.last_seq < last:
                await socket.next()
    caught_up = time.monotonic()
    row.completed = sum(e["status"] == "completed" for e in ended)
    row.failed = len(ended) - row.completed
    row.sockets = SOCKETS // 2
    row.sockets_repaired = sum(seq_exact(s, last) for s in sockets if s.server is survivor
                               and sockets.index(s) % 2 == 0)
    row.recover_s = (max(resumed) - killed_at[0]) if resumed else None
    for socket in sockets:
        duplicated, missing = delta_faults(socket, last)
        row.deltas_duplicated += duplicated
        row.deltas_missing += missing
    exported = await export(survivor, app.conversation, app.token())
    stored = stored_text(exported)
    row.messages_lost = int(not any(m.get("client_id") == "long-run"
                                    for m in exported["messages"]))
    mismatched = sum(1 for s in sockets for mid, text in streamed_text(s.events).items()
                     if stored.get(mid) != text)
    row.notes.append(f"runs column: the run's end as each of the {SOCKETS} sockets saw it; "
                     f"recover s: kill to the last socket reconnected and resumed "
                     f"({caught_up - killed_at[0]:.2f}s to every socket caught up); "
                     f"{len(resumed)} reconnects")
    for socket in sockets:
        await socket.close()
    assert row.completed == SOCKETS
    assert all(seq_exact(s, last) for s in sockets)
    assert row.deltas_duplicated == row.deltas_missing == row.messages_lost == 0
    assert mismatched == 0
