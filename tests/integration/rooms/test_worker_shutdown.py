"""A stopping run worker closes its warm MCP servers and provider clients before its loop ends
(:mod:`apps.rooms.shutdown`), in both places a worker runs: ``runworker``'s loop
(:class:`ClosingWorker`, on both event loops it may run on: :mod:`apps.common.event_loops`) and
Daphne's reactor (``manage.py serve``'s embedded worker, on the same configured loop).

Each case runs in a fresh interpreter that warms one pooled server (the SDK test server with two
``sleep`` helpers, found in /proc by their marker) and one provider, is sent SIGTERM as a
supervisor stops it, and reports after its loop has ended, before the process exits (the
subreaper's PDEATHSIG would end the servers then anyway): which marked processes still run and
whether the provider's HTTP client is closed."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services.django_proc import django_env, finish, start_script
from tests.unit.engine.survivors import kill_marked, marker_sleep

WARM = """
import asyncio, json, os
from apps.engine.mcp import McpManager, ServerKey
from apps.engine.providers.base import ProviderSettings
from apps.integrations.builders import provider_pool
from apps.integrations.mcp_pool import mcp_pools
from tests.unit.engine.mcp.kit import py_stdio_spec
from tests.unit.engine.survivors import running

SEEN = {}

def marked():  # the server, its supervisor and helpers; not this script, which names MARKER
    return [pid for pid in running(marker=MARKER) if pid != str(os.getpid())]

async def warm():
    spec = py_stdio_spec(args=("--helpers", MARKER), sandbox=False)
    async with McpManager([spec], keys=[ServerKey(team=1, server=1)], pool=mcp_pools.get()):
        pass  # a run: the server stays warm in the pool
    SEEN["provider"] = provider_pool.get(ProviderSettings("anthropic", "http://127.0.0.1:9"))
    SEEN["loop"] = type(asyncio.get_running_loop()).__module__.split(".")[0]
    print("warm", len(marked()), flush=True)

def report():
    print(json.dumps({"left": marked(), "loop": SEEN["loop"],
                      "provider_closed": SEEN["provider"].inner._client.is_closed}))
"""

RUNWORKER = WARM + """
from channels.layers import get_channel_layer
from apps.realtime.groups import RUN_CHANNEL
from apps.rooms.run_worker import OutlastingWorker  # runworker's: a ClosingWorker
from config.asgi import application

class Warmed(OutlastingWorker):
    async def handle(self):
        await warm()
        await super().handle()

Warmed(application=application, channels=[RUN_CHANNEL],
       channel_layer=get_channel_layer()).run()
report()
"""

DAPHNE = WARM + """
from daphne.server import Server  # its reactor: apps.common's, over the configured loop
from twisted.internet import reactor
from apps.rooms.shutdown import close_before_reactor_shutdown
from config.asgi import application

close_before_reactor_shutdown(reactor)  # as serve does
reactor.callWhenRunning(lambda: asyncio.get_event_loop().call_soon(
    lambda: asyncio.ensure_future(warm())))
Server(application=application, endpoints=["tcp:port=0:interface=127.0.0.1"],
       signal_handlers=True, verbosity=0).run()  # Twisted's SIGTERM handler stops it
report()
"""


@pytest.fixture
def marker() -> Iterator[str]:
    _, seconds = marker_sleep()
    yield seconds
    kill_marked(seconds)


def stopped_by_sigterm(code: str, marker: str, tmp_path: Path, loop: str
                       ) -> dict[str, object]:
    """Start ``code`` with ``marker`` on event loop ``loop``, wait until it has warmed its
    pools, SIGTERM it and return its report."""
    env = django_env(data_dir=tmp_path, CONFAB_EVENT_LOOP=loop)
    proc = start_script(f"MARKER = {marker!r}\n{code}", env)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline() if ready else ""  # nothing: the script failed (stderr below)
    if not line:
        proc.kill()
    assert line.split()[:1] == ["warm"], line + proc.communicate(timeout=30)[1]
    assert int(line.split()[1]) >= 3  # the server and its two helpers (and the supervisor)
    os.kill(proc.pid, signal.SIGTERM)
    return finish(proc, timeout=60)


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_runworker_closes_its_pools_when_sigterm_stops_it(loop: str, marker: str,
                                                          tmp_path: Path) -> None:
    report = stopped_by_sigterm(RUNWORKER, marker, tmp_path, loop)
    assert report == {"left": [], "loop": loop, "provider_closed": True}


def test_serve_closes_the_embedded_workers_pools_before_the_reactor_stops(
        marker: str, tmp_path: Path) -> None:
    report = stopped_by_sigterm(DAPHNE, marker, tmp_path, "asyncio")
    assert report == {"left": [], "loop": "asyncio", "provider_closed": True}
