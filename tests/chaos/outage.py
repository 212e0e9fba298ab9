"""A service outage mid-run, for the Redis and PostgreSQL scenarios (issue 26): two Daphne, a
run worker, fakellm. While the run streams, the service goes down and comes back on the same
port; the run must go on or end ``interrupted``; a socket that was closed reconnects with
``after_seq`` (docs/protocol.md, Connecting); every socket ends seq-exact with the store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from websockets.exceptions import ConnectionClosed, WebSocketException

from tests.chaos.live import (
    Deployment,
    Socket,
    count_sockets,
    export,
    script,
    store_seq,
)
from tests.chaos.table import Row

ANSWER = " ".join(f"word{n}" for n in range(400))  # ~8 s at 50 tokens/s
RECONNECTS = 10  # per socket, before the scenario gives up on it


async def outage(app: Deployment, row: Row, *, down: Callable[[], object],
                 up: Callable[[], object], down_s: float) -> None:
    """One run streamed to a socket on each server while a service is taken ``down`` (called in
    a thread), left down ``down_s`` seconds and brought ``up`` again (in the main thread);
    fills ``row``, then asserts no run failed, every socket seq-exact, nothing lost, no delta
    duplicated or missing, and every server and worker process still alive."""
    sockets = [Socket(server, app.conversation, app.token()) for server in app.servers]
    for socket in sockets:
        await socket.open()
    await sockets[0].send({"type": "send", "client_id": "outage-run", "text": script(
        {"text": ANSWER})})
    await sockets[0].until("text_delta", timeout=60)
    await asyncio.to_thread(down)
    await asyncio.sleep(down_s)  # the outage itself, not a wait for something
    # In this (the main) thread, not a worker thread: the orphan guard kills a service when the
    # thread that started it ends (tests.services.procs.orphan_guard). Blocks the loop ~1 s.
    up()
    revived = time.monotonic()
    reconnects = [0, 0]
    alive: list[str] = []
    ended = await asyncio.gather(*(_run_end(s, reconnects, n) for n, s in enumerate(sockets)),
                                 return_exceptions=True)
    statuses = [e["status"] if isinstance(e, dict) else repr(e) for e in ended]
    row.completed = statuses.count("completed")
    row.interrupted = statuses.count("interrupted")
    row.failed = len(statuses) - row.completed - row.interrupted
    row.sockets = len(sockets)
    try:
        last = await store_seq(app.servers[1], app.conversation, app.token())
        for n, socket in enumerate(sockets):
            await _catch_up(socket, last, reconnects, n)
        row.recover_s = time.monotonic() - revived
        count_sockets(row, sockets, last)
        exported = await export(app.servers[1], app.conversation, app.token())
        row.messages_lost = int(not any(m.get("client_id") == "outage-run"
                                        for m in exported["messages"]))
    finally:
        alive[:] = [p.name for p in (*app.servers, *app.workers) if p.proc.poll() is None]
        row.notes.append(f"processes alive after: {alive}")
        row.notes.append(f"runs column: the run's end as each socket saw it ({statuses}); "
                         f"reconnects per socket {reconnects}; recover s: from the service's "
                         "return to every socket seq-exact")
        for socket in sockets:
            await socket.close()
    assert row.failed == 0, statuses
    assert row.sockets_repaired == len(sockets) and row.messages_lost == 0
    assert row.deltas_duplicated == row.deltas_missing == 0
    assert len(alive) == len(app.servers) + len(app.workers), alive


async def _run_end(socket: Socket, reconnects: list[int], n: int) -> dict:
    """The ``run_ended`` event, reconnecting (``after_seq``) whenever the socket is closed."""
    async with asyncio.timeout(120):
        while True:
            try:
                return await socket.until("run_ended", timeout=120)
            except ConnectionClosed:
                await _reopen(socket, reconnects, n)


async def _catch_up(socket: Socket, last: int, reconnects: list[int], n: int) -> None:
    async with asyncio.timeout(30):
        while socket.last_seq < last:
            try:
                await socket.next()
            except ConnectionClosed:
                await _reopen(socket, reconnects, n)


async def _reopen(socket: Socket, reconnects: list[int], n: int) -> None:
    """Reconnect to the same server, retrying (bounded) while it refuses."""
    while True:
        reconnects[n] += 1
        if reconnects[n] > RECONNECTS:
            raise RuntimeError(f"socket {n}: more than {RECONNECTS} reconnects")
        try:
            await socket.open()
            return
        except (OSError, WebSocketException, TimeoutError):
            await asyncio.sleep(0.5)
