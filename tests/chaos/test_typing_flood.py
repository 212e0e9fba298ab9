"""A typing flood from one client (issue 26): 2,000 ``typing`` frames as fast as one socket
sends them, on one Daphne, while a run streams to a watcher on the other. The flooder's socket
and the watcher's stay open, the run completes, every socket is seq-exact with the store, and
the flooder's message sent right after the flood is stored and acknowledged.
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

TYPING = 2000
LONG = " ".join(f"word{i}" for i in range(120))


def test_a_typing_flood_loses_nothing(e2e_stack: ProcessStack,
                                      chaos_row: Callable[..., Row]) -> None:
    app = deploy(e2e_stack, servers=2, workers=1, rate=200)
    row = chaos_row("typing flood", f"{TYPING} typing frames from 1 socket during a run")
    asyncio.run(_scenario(app, row))


async def _scenario(app: Deployment, row: Row) -> None:
    flooder = Socket(app.servers[0], app.conversation, app.token("alice"))
    watcher = Socket(app.servers[1], app.conversation, app.token("bob"))
    sockets = [flooder, watcher]
    for socket in sockets:
        await socket.open()
    await flooder.send({"type": "send", "client_id": "flood-run", "text": script({"text": LONG})})
    await watcher.until("text_delta")
    for _ in range(TYPING):
        await flooder.send({"type": "typing"})
    await flooder.send({"type": "send", "client_id": "after-flood", "text": "still here"})
    flooded = time.monotonic()
    acked = await _ack(flooder, "after-flood")
    ack_s = time.monotonic() - flooded
    ended = await watcher.until("run_ended", timeout=120)
    row.completed += ended["status"] == "completed"
    row.failed += ended["status"] != "completed"
    began = time.monotonic()
    last = await store_seq(app.servers[0], app.conversation, app.token())
    await catch_up(sockets, last)
    row.recover_s = time.monotonic() - began
    count_sockets(row, sockets, last)
    exported = await export(app.servers[1], app.conversation, app.token())
    ids = {m.get("client_id") for m in exported["messages"]}
    row.messages_lost = len({"flood-run", "after-flood"} - ids)
    typing_seen = sum(1 for f in watcher.others if f["type"] == "presence" and "typing" in f)
    row.notes.append(f"the watcher received {typing_seen} typing presence frames of {TYPING}; "
                     f"the flooder's next message was acknowledged {ack_s:.1f}s after the "
                     "flood (its frames are handled in order)")
    for socket in sockets:
        await socket.close()
    assert acked and ended["status"] == "completed"
    assert row.sockets_repaired == len(sockets) and row.messages_lost == 0
    assert row.deltas_duplicated == row.deltas_missing == 0


async def _ack(socket: Socket, client_id: str) -> bool:
    """Whether ``client_id``'s ack arrived (already or within the timeout: the flooder's
    frames are handled one by one, each reading the database, so it may take long)."""
    if any(f["type"] == "ack" and f["client_id"] == client_id for f in socket.others):
        return True
    async with asyncio.timeout(240):
        while True:
            frame = await socket.next()
            if frame["type"] == "ack" and frame["client_id"] == client_id:
                return True
