"""Run start: a person's ``send`` -> the first ``text_delta`` frame, minus the model's own time
to first byte, for a team without MCP servers and with two stdio MCP servers, cold and warm.

Run with ``make bench`` or ``.venv/bin/python -m tests.benchmarks.bench_run_start``
(``--runs N``). Everything runs in this one process and event loop, as the consumer tests do:
the real ASGI application through ``WebsocketCommunicator`` (token auth, the room's consumer),
the embedded run worker, the in-memory channel layer, SQLite (a temporary data directory), and
fakellm on 127.0.0.1 as the team's model, streaming 20 tokens/s (a model that streams, so the
first delta is not flushed by the message's end).

The model's own time to first byte is measured at the model: an ASGI wrapper around fakellm
records when each request arrived and when its first non-empty body chunk left. Overhead =
(send -> first ``text_delta``) - (request arrived -> first body chunk): what confab adds (the
consumer, the run's claim and setup, MCP servers, the provider request, the projector, the
broadcast).

Cases: no MCP server; two stdio servers (``mcp-server-time`` and the SDK test server
``tests/unit/engine/mcp/py_server.py``, the MCP tests' servers, sandboxed where bubblewrap
works) **cold** (the worker's pool closed before every run: each run starts both) and **warm**
(the pool kept: the servers started by the first run). Prints the median, p90 and best per case
(ms). Goal (issue 22): warm overhead <= 30 ms.

``--steps`` adds the timing harness of :mod:`tests.benchmarks.run_start_steps`: ``perf_counter``
marks around each step from the consumer's receive to the provider's HTTP request (the
consumer's checks, ``message_post``, ``run.start``, the claim-and-setup hop and its parts, the
pool's acquire, the runner up to ``StepRun.stream``, the projector's stores), printed per step
as the median start (ms after the send) and time spent, with the thread hops and SQL statements
made before the request. On a loaded machine these move less than the totals.

Profiled with ``py-spy record -r 400 -f raw -o prof.raw -- .venv/bin/python -m
tests.benchmarks.bench_run_start --runs 30`` (py-spy from PyPI), the raw stacks folded per
frame of interest (``message_post``, ``RunHost._setup``, ``HttpProvider.stream_chat``,
``Atomic.__exit__``): half of ``message_post``'s samples were its commit hooks waiting in
``AsyncToSync`` for the event loop to send their broadcasts, which is what
:func:`apps.realtime.publish.database_call` removed. The counts of hops and queries a send and a
run's start make are pinned by ``tests/consumers/test_send_cost.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.test_settings")
os.environ.setdefault("CONFAB_MESSAGES_PER_MINUTE", "100000")

import django

django.setup()
logging.getLogger("httpx2").setLevel(logging.WARNING)  # no "HTTP Request: POST ..." per run

from asgiref.sync import sync_to_async  # noqa: E402
from django.core.management import call_command  # noqa: E402

from apps.accounts.models import Membership, Role, Team  # noqa: E402
from apps.integrations.builders import provider_pool  # noqa: E402
from apps.integrations.demo import ensure_demo_models  # noqa: E402
from apps.integrations.mcp_pool import mcp_pools  # noqa: E402
from apps.integrations.models import McpServerConfig, McpTransport  # noqa: E402
from apps.rooms.embedded import start_embedded_worker  # noqa: E402
from apps.rooms.models import Conversation, Room  # noqa: E402
from config.asgi import application  # noqa: E402
from tests.benchmarks.run_start_steps import Harness, install  # noqa: E402
from tests.consumers.conftest import connect, script  # noqa: E402
from tests.integration.personas import make_user  # noqa: E402
from tests.services.mcp_servers import python_read_paths, time_command  # noqa: E402
from tests.unit.engine.mcp.kit import PY_SERVER  # noqa: E402

RATE = 20.0  # tokens per second from the model
TEXT = " ".join(f"w{i}" for i in range(8))
FIRST_WORD = b"w0"
RUNS = 15
GOAL_MS = 30.0
CLIENT_IDS = itertools.count()

Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class ModelClock:
    """Wraps the model's ASGI app: (arrived, first text sent) per request, perf_counter; the
    first text is the first body chunk holding the script's first word."""

    def __init__(self, app: Asgi) -> None:
        self.app = app
        self.requests: list[tuple[float, float | None]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        arrived = time.perf_counter()
        index = len(self.requests)
        self.requests.append((arrived, None))

        async def timed_send(message: dict[str, Any]) -> None:
            if (message["type"] == "http.response.body" and FIRST_WORD in message.get("body", b"")
                    and self.requests[index][1] is None):
                self.requests[index] = (arrived, time.perf_counter())
            await send(message)

        await self.app(scope, receive, timed_send)

    def request(self, since: int) -> tuple[float, float]:
        """(arrived, first text sent) of the first request made after ``since`` requests."""
        arrived, first = self.requests[since]
        assert first is not None
        return arrived, first


async def serve_model(clock_box: list[ModelClock]) -> Any:
    """fakellm wrapped by :class:`ModelClock` on 127.0.0.1 (tests.integration.fakellm_server,
    with the wrapper in between)."""
    import socket

    import uvicorn

    from apps.engine.fakellm.app import create_app

    model = ModelClock(create_app(rate=RATE))
    clock_box.append(model)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(model, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, task


def setup_team(name: str, origin: str, *, mcp: bool) -> tuple[Any, int]:
    """A team with an owner, a conversation and fakellm as its model (and two MCP servers)."""
    owner = make_user(f"owner-{name}")
    team = Team.objects.create(name=name, slug=name)
    Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    ensure_demo_models(team, fakellm_url=origin)
    if mcp:
        command, args, paths = time_command()
        McpServerConfig.objects.create(name="time", transport=McpTransport.STDIO, team=team,
                                       command=command, args=list(args), read_paths=list(paths))
        McpServerConfig.objects.create(
            name="py", transport=McpTransport.STDIO, team=team, command=sys.executable,
            args=[str(PY_SERVER)], read_paths=[*python_read_paths(), str(PY_SERVER.parent)])
    room = Room.objects.create(team=team, name="General", created_by=owner)
    conversation = Conversation.objects.create(room=room, title="Bench", created_by=owner)
    return owner, conversation.pk


async def one_run(client: Any, model: ModelClock, steps: Harness | None = None
                  ) -> tuple[float, float, float]:
    """One run, in ms: (overhead, send -> the model's request, its first text -> the frame);
    ``steps``: the timing harness to mark it in."""
    since = len(model.requests)
    if steps is not None:
        steps.start()
    started = time.perf_counter()
    await client.send({"type": "send", "client_id": f"b{next(CLIENT_IDS)}",
                       "text": script({"text": TEXT})})
    await client.until_event("text_delta")
    seen = time.perf_counter()
    await client.until_event("run_ended")
    arrived, first_text = model.request(since)
    if steps is not None:
        steps.done(arrived)
    ms = 1000.0
    return ((seen - started - (first_text - arrived)) * ms, (arrived - started) * ms,
            (seen - first_text) * ms)


async def case(label: str, user: Any, conversation_id: int, model: ModelClock, runs: int, *,
               cold: bool, steps: Harness | None = None) -> list[float]:
    """Run ``runs`` runs (warm: one more first, not counted) and print the overheads (ms);
    with ``steps``, then the per-step timings of the counted runs."""
    client, _ = await connect(user, conversation_id)
    figures = []
    for n in range(runs + 1):
        if cold:
            await mcp_pools.aclose_all()
        counted = n or cold  # warm: the first run starts the servers
        figure = await one_run(client, model, steps if counted else None)
        if counted:
            figures.append(figure)
    await client.close()
    overheads = sorted(f[0] for f in figures)
    p90 = overheads[int(0.9 * (len(overheads) - 1))]
    to_model = statistics.median(f[1] for f in figures)
    to_room = statistics.median(f[2] for f in figures)
    print(f"{label:<28} median {statistics.median(overheads):7.1f}  p90 {p90:7.1f}  "
          f"best {overheads[0]:7.1f} ms  (send->model {to_model:.1f}, model->room "
          f"{to_room:.1f}; {len(figures)} runs)")
    if steps is not None and steps.runs:
        print(steps.report())
        steps.runs.clear()
    return overheads


async def main(runs: int, steps: Harness | None) -> None:
    box: list[ModelClock] = []
    origin, server, task = await serve_model(box)
    model = box[0]
    plain = await sync_to_async(setup_team)("plain", origin, mcp=False)
    with_mcp = await sync_to_async(setup_team)("mcp", origin, mcp=True)
    workers = start_embedded_worker(application)
    try:
        print(f"send -> first text_delta minus the model's time to first text; model streams "
              f"{RATE:g} tokens/s; load average {os.getloadavg()[0]:.2f}")
        await case("warm-up", *plain, model, 3, cold=True)
        base = await case("no MCP server", *plain, model, runs, cold=True, steps=steps)
        cold = await case("2 stdio MCP servers, cold", *with_mcp, model, max(runs // 3, 3),
                          cold=True)
        warm = await case("2 stdio MCP servers, warm", *with_mcp, model, runs, cold=False,
                          steps=steps)
        verdict = "meets" if statistics.median(warm) <= GOAL_MS else "misses"
        print(f"warm median {statistics.median(warm):.1f} ms {verdict} the goal of "
              f"<= {GOAL_MS:g} ms (no MCP: {statistics.median(base):.1f} ms, cold: "
              f"{statistics.median(cold):.1f} ms)")
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        await mcp_pools.aclose_all()
        await provider_pool.aclose_all()
        server.should_exit = True
        await task


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="runs per case")
    parser.add_argument("--steps", action="store_true",
                        help="also time each step up to the model request (no MCP and warm)")
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    asyncio.run(main(options.runs, install() if options.steps else None))
