"""The warm MCP pool against the SDK test server over stdio (``py_server.py``, not sandboxed so
its process can be found and signalled): reuse, tenant isolation, list changes, Stop, and every
way a pooled server is closed ends its helpers too (the subreaper), with nothing left behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.engine.mcp import McpManager, McpServerSpec
from apps.engine.mcp.pool import McpPool, ServerKey
from tests.consumers.fake_clock import FakeClock
from tests.unit.engine.mcp.kit import (
    PY_SERVER,
    call,
    descendants,
    processes_running,
    py_stdio_spec,
    wait_until,
)
from tests.unit.engine.survivors import kill_marked, marker_sleep, running, sleeping

ACME = ServerKey(team=1, server=7)
GLOBEX = ServerKey(team=2, server=7)  # the same catalog server, enabled by another team


@pytest.fixture
async def pool() -> AsyncIterator[McpPool]:
    clock = FakeClock()
    pool = McpPool(idle_timeout_s=60, max_processes=4, sandbox="off", clock=clock,
                   check_timeout_s=1.0)
    pool.clock = clock  # type: ignore[attr-defined]  (the tests move it)
    yield pool
    await pool.aclose()


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique ``sleep`` length: the helpers a server started are found by it."""
    _, seconds = marker_sleep()
    yield seconds
    kill_marked(seconds)


def helper_spec(marker: str, **kw: Any) -> McpServerSpec:
    """The test server, which starts two helpers (one outside its process group)."""
    return py_stdio_spec(args=("--helpers", marker), sandbox=False, **kw)


def server_pids(marker: str = "") -> set[int]:
    """The test servers themselves (not their supervisors), optionally by helper marker."""
    return {p.pid for p in processes_running(str(PY_SERVER))
            if p.cmdline()[1] == str(PY_SERVER) and marker in " ".join(p.cmdline())}


def run(pool: McpPool, *servers: tuple[ServerKey, McpServerSpec]) -> McpManager:
    return McpManager([spec for _, spec in servers], keys=[key for key, _ in servers],
                      pool=pool)


async def test_a_second_run_uses_the_warm_server(pool: McpPool, marker: str,
                                                 tmp_path: Path) -> None:
    spec = helper_spec(marker)
    async with run(pool, (ACME, spec)) as first:
        assert (await call(first.registry, "mcp__py__echo", tmp_path, text="a")).content == \
            "echo: a"
        started = server_pids(marker)
    assert first.registry.get("mcp__py__echo") is None  # the run's registry lets go
    async with run(pool, (ACME, spec)) as second:
        assert second.status()[0].state == "connected"
        assert (await call(second.registry, "mcp__py__append_note", tmp_path,
                           text="x")).content == "1 notes"
        assert server_pids(marker) == started and len(started) == 1
    assert pool.size() == 1


async def test_two_teams_never_share_a_server(pool: McpPool, marker: str,
                                              tmp_path: Path) -> None:
    spec = helper_spec(marker)
    async with run(pool, (ACME, spec)) as acme:
        await call(acme.registry, "mcp__py__append_note", tmp_path, text="acme's")
        acme_pid = server_pids(marker)
    async with run(pool, (GLOBEX, spec)) as globex:
        # A server of its own: Acme's note is not there.
        assert (await call(globex.registry, "mcp__py__append_note", tmp_path,
                           text="globex's")).content == "1 notes"
        assert len(server_pids(marker) - acme_pid) == 1
    assert pool.size() == 2


async def test_runs_starting_together_start_a_server_once(pool: McpPool, marker: str) -> None:
    spec = helper_spec(marker)

    async def one() -> str:
        async with run(pool, (ACME, spec)) as mcp:
            return mcp.status()[0].state

    assert await asyncio.gather(one(), one(), one()) == ["connected"] * 3
    assert len(server_pids(marker)) == 1


async def test_a_list_change_reaches_the_runs_using_it_and_later_runs(
        pool: McpPool, marker: str, tmp_path: Path) -> None:
    spec = helper_spec(marker)
    async with run(pool, (ACME, spec)) as watcher, run(pool, (ACME, spec)) as changer:
        await call(changer.registry, "mcp__py__add_tool", tmp_path, name="shout")
        for mcp in (changer, watcher):
            await wait_until(lambda m=mcp: m.registry.get("mcp__py__shout") is not None,
                             what="the added tool in every run")
    async with run(pool, (ACME, spec)) as later:
        assert (await call(later.registry, "mcp__py__shout", tmp_path, text="hi")).content == \
            "shout: hi"


async def test_stop_cancels_the_runs_call_not_the_pooled_server(
        pool: McpPool, marker: str, tmp_path: Path) -> None:
    spec = helper_spec(marker)
    running_file = tmp_path / "running"
    async with run(pool, (ACME, spec)) as mcp:
        pending = asyncio.create_task(
            call(mcp.registry, "mcp__py__hang", tmp_path, marker=str(running_file)))
        await wait_until(running_file.exists, what="the call to reach the server")
        pending.cancel()  # what Stop does to a run's tool calls
        with pytest.raises(asyncio.CancelledError):
            await pending
        await wait_until((tmp_path / "running.cancelled").exists,
                         what="the server to see notifications/cancelled")
        started = server_pids(marker)
    async with run(pool, (ACME, spec)) as next_run:
        assert (await call(next_run.registry, "mcp__py__echo", tmp_path, text="y")).content \
            == "echo: y"
    assert server_pids(marker) == started


async def test_a_server_that_died_while_idle_is_started_again(
        pool: McpPool, marker: str, tmp_path: Path) -> None:
    spec = helper_spec(marker)
    async with run(pool, (ACME, spec)):
        [dead] = server_pids(marker)
    os.kill(dead, signal.SIGKILL)
    await wait_until(lambda: running(marker=marker) == [],  # its supervisor ends the helpers
                     what="the server's tree to end")
    pool.clock.advance(pool.check_idle_s)  # type: ignore[attr-defined]  (idle long enough)
    async with run(pool, (ACME, spec)) as mcp:
        assert (await call(mcp.registry, "mcp__py__echo", tmp_path, text="z")).content == \
            "echo: z"
        assert len(server_pids(marker) - {dead}) == 1


async def test_only_a_server_idle_for_the_check_interval_is_health_checked(
        pool: McpPool, marker: str, tmp_path: Path) -> None:
    """A server released moments ago goes to the next run unchecked (no tools/list round
    trip before the model request); once idle for ``check_idle_s`` it is checked again."""
    clock: FakeClock = pool.clock  # type: ignore[attr-defined]
    spec = helper_spec(marker)
    async with run(pool, (ACME, spec)):
        [pid] = server_pids(marker)
    os.kill(pid, signal.SIGSTOP)  # a check would fail and replace it
    try:
        clock.advance(pool.check_idle_s / 2)
        async with run(pool, (ACME, spec)) as mcp:
            assert mcp.status()[0].state == "connected"
            assert server_pids(marker) == {pid}  # the same server: not checked
        clock.advance(pool.check_idle_s)
        async with run(pool, (ACME, spec)) as mcp:
            assert (await call(mcp.registry, "mcp__py__echo", tmp_path, text="a")).content \
                == "echo: a"
            assert len(server_pids(marker) - {pid}) == 1  # checked, failed, replaced
    finally:
        with contextlib.suppress(ProcessLookupError):  # closed with its replacement
            os.kill(pid, signal.SIGCONT)


async def test_a_changed_configuration_starts_the_server_again(
        pool: McpPool, marker: str, tmp_path: Path) -> None:
    async with run(pool, (ACME, helper_spec(marker, env={"TOKEN": "old-token"}))):
        old = server_pids(marker)
    async with run(pool, (ACME, helper_spec(marker, env={"TOKEN": "new-token"}))) as mcp:
        assert mcp.status()[0].state == "connected"
        new = server_pids(marker) - old
        assert len(new) == 1
    await pool.drain()
    assert server_pids(marker) == new


async def test_a_request_for_some_servers_keeps_the_teams_other_idle_ones(
        pool: McpPool, tmp_path: Path) -> None:
    """A person's attachment names one server (whole_team=False): the team's other idle
    server stays; a run's acquire (all the team's servers) closes the one it no longer has."""
    notes, other = ServerKey(team=1, server=8), ServerKey(team=1, server=9)
    async with run(pool, (notes, py_stdio_spec(sandbox=False)),
                   (other, py_stdio_spec("py2", sandbox=False))):
        pass
    async with McpManager([py_stdio_spec(sandbox=False)], keys=[notes], pool=pool,
                          whole_team=False):
        assert pool.keys == {notes, other}
    async with run(pool, (notes, py_stdio_spec(sandbox=False))):
        assert pool.keys == {notes}


async def test_every_server_in_use_gives_a_run_its_own_when_the_pool_is_full(
        marker: str, tmp_path: Path) -> None:
    pool = McpPool(idle_timeout_s=60, max_processes=1, sandbox="off")
    try:
        async with run(pool, (ACME, helper_spec(marker))):
            async with run(pool, (GLOBEX, helper_spec(marker))) as extra:
                assert extra.status()[0].state == "connected"
                assert len(server_pids(marker)) == 2
            await pool.drain()
            assert len(server_pids(marker)) == 1 and pool.size() == 1
    finally:
        await pool.aclose()


# -- every close ends the server's helpers ------------------------------------------------------

async def _idle_timeout(pool: McpPool, marker: str) -> None:
    clock: FakeClock = pool.clock  # type: ignore[attr-defined]
    await clock.sleeper(clock.now() + pool.idle_timeout_s)
    clock.advance(pool.idle_timeout_s)
    await wait_until(lambda: pool.size() == 0, what="the idle server to leave the pool")


async def _configuration_change(pool: McpPool, marker: str) -> None:
    async with run(pool, (ACME, py_stdio_spec(sandbox=False, env={"CHANGED": "yes"}))):
        pass


async def _failed_health_check(pool: McpPool, marker: str) -> None:
    [pid] = server_pids(marker)
    os.kill(pid, signal.SIGSTOP)  # alive, but it answers nothing
    pool.clock.advance(pool.check_idle_s)  # type: ignore[attr-defined]  (idle long enough)
    async with run(pool, (ACME, helper_spec(marker))) as mcp:
        assert mcp.status()[0].state == "connected"
        assert len(server_pids(marker) - {pid}) == 1  # a new server; the stopped one closes
    async with run(pool, (ACME, py_stdio_spec(sandbox=False))):  # the replacement goes too
        pass


async def _eviction(pool: McpPool, marker: str) -> None:
    pool.max_processes = 1
    async with run(pool, (GLOBEX, py_stdio_spec(sandbox=False))):
        pass


async def _shutdown(pool: McpPool, marker: str) -> None:
    await pool.aclose()


@pytest.mark.parametrize("close", [_idle_timeout, _configuration_change, _failed_health_check,
                                   _eviction, _shutdown],
                         ids=["idle", "config", "health", "eviction", "shutdown"])
async def test_closing_a_pooled_server_ends_its_descendants(
        pool: McpPool, marker: str, close: Callable[[McpPool, str], Any]) -> None:
    before = descendants()
    async with run(pool, (ACME, helper_spec(marker))):
        assert len(sleeping(marker)) == 2
    assert len(sleeping(marker)) == 2  # released, still warm
    await close(pool, marker)
    await pool.drain()
    assert running(marker=marker) == []  # the server and both helpers, in its group or not
    if close is _shutdown:
        assert descendants() - before == set()
