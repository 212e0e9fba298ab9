"""MCP over stdio against real servers: ``@modelcontextprotocol/server-everything`` (npm, run
with node), ``mcp-server-time`` (PyPI) and the SDK test server, sandboxed where bubblewrap works.
Process bookkeeping with psutil: nothing is left behind, not even a zombie or a descriptor."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from apps.engine.errors import ToolError
from apps.engine.events import RunEnded, ToolResultEvent
from apps.engine.mcp import McpManager, McpServerSpec
from apps.engine.mcp.transport import sandbox_argv
from apps.engine.messages import ImageBlock, ToolResultBlock
from apps.engine.providers.scripted import ScriptedProvider
from apps.engine.runtime.runner import AgentRunner, RunConfig
from apps.engine.tools.base import Concurrency
from apps.engine.tools.registry import ToolRegistry
from apps.engine.tools.sandbox import resolve_status
from tests.unit.engine.mcp.kit import (
    PY_SERVER,
    call,
    descendants,
    everything_spec,
    open_fds,
    processes_running,
    py_stdio_spec,
    time_spec,
    wait_until,
)
from tests.unit.engine.runtime_kit import user
from tests.unit.engine.survivors import kill_marked, marker_sleep, running, sleeping

SANDBOXED = resolve_status("auto").active
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason="bubblewrap does not work here")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def servers() -> AsyncIterator[McpManager]:
    """server-everything (with a configured secret) and mcp-server-time, once for the module."""
    specs = [everything_spec(env={"API_TOKEN": "t0k"}), time_spec()]
    async with McpManager(specs) as manager:
        yield manager


module_loop = pytest.mark.asyncio(loop_scope="module")


@module_loop
async def test_both_servers_start_and_list_their_tools(servers: McpManager) -> None:
    assert servers.warnings == []
    names = [t.spec.name for t in servers.tools()]
    assert {"mcp__everything__echo", "mcp__everything__get-sum",
            "mcp__time__get_current_time", "mcp__time__convert_time"} <= set(names)
    states = {s.name: (s.state, s.protocol_version) for s in servers.status()}
    assert states == {"everything": ("connected", "2025-11-25"),
                      "time": ("connected", "2026-07-28")}
    if SANDBOXED:
        assert all(s.sandbox and s.sandbox.startswith("sandboxed") for s in servers.status())


@module_loop
async def test_server_everything_hints_are_mapped(servers: McpManager) -> None:
    echo = servers.registry.get("mcp__everything__echo")
    gzip = servers.registry.get("mcp__everything__gzip-file-as-resource")
    assert echo is not None and gzip is not None
    assert echo.spec.concurrency is Concurrency.ALWAYS and not echo.spec.requires_approval
    # readOnlyHint false, destructiveHint false: runs alone, no approval needed
    assert gzip.spec.concurrency is Concurrency.NEVER and not gzip.spec.requires_approval
    assert echo.spec.parameters["properties"]["message"]["type"] == "string"


@module_loop
async def test_echo_add_and_the_time_are_called(servers: McpManager, tmp_path: Path) -> None:
    echo = await call(servers.registry, "mcp__everything__echo", tmp_path, message="hello")
    total = await call(servers.registry, "mcp__everything__get-sum", tmp_path, a=2, b=3)
    now = await call(servers.registry, "mcp__time__get_current_time", tmp_path,
                     timezone="Etc/UTC")
    assert echo.content == "Echo: hello"
    assert total.content == "The sum of 2 and 3 is 5."
    assert json.loads(str(now.content))["timezone"] == "Etc/UTC"


@module_loop
async def test_images_resources_and_links_of_server_everything(
        servers: McpManager, tmp_path: Path) -> None:
    image = await call(servers.registry, "mcp__everything__get-tiny-image", tmp_path)
    resource = await call(servers.registry, "mcp__everything__get-resource-reference", tmp_path,
                          resourceType="Text", resourceId=1)
    links = await call(servers.registry, "mcp__everything__get-resource-links", tmp_path, count=2)
    assert isinstance(image.content, list)
    assert any(isinstance(b, ImageBlock) and b.media_type == "image/png" for b in image.content)
    assert "[resource demo://resource/dynamic/text/1 (text/plain)]\nResource 1: " in \
        str(resource.content)
    assert str(links.content).count("[resource link: ") == 2
    assert "<demo://resource/dynamic/blob/1>" in str(links.content)


@module_loop
async def test_a_stdio_server_gets_a_cleared_environment_plus_its_own(
        servers: McpManager, tmp_path: Path) -> None:
    output = await call(servers.registry, "mcp__everything__get-env", tmp_path)
    env = json.loads(str(output.content))
    assert env["API_TOKEN"] == "t0k"
    assert env["HOME"].startswith("/tmp/confab-mcp-") and env["PWD"] == env["HOME"]
    for leaked in ("USER", "LOGNAME", "SHELL", "VIRTUAL_ENV", "PYTEST_CURRENT_TEST"):
        assert leaked not in env


async def test_a_server_that_fails_to_start_is_skipped_and_the_other_works(
        tmp_path: Path) -> None:
    broken = McpServerSpec(name="broken", transport="stdio", command="/nonexistent/mcp-server")
    warnings: list[str] = []
    async with McpManager([broken, time_spec()],
                          on_warning=lambda e: warnings.append(e.message)) as mcp:
        assert [s.state for s in mcp.status()] == ["failed", "connected"]
        now = await call(mcp.registry, "mcp__time__get_current_time", tmp_path,
                         timezone="Europe/Paris")
        assert "Europe/Paris" in str(now.content)
    assert len(warnings) == 1
    assert "MCP server 'broken' is unavailable" in warnings[0]
    assert "/nonexistent/mcp-server" in warnings[0]  # what the process said before it died


async def test_a_server_that_never_initializes_is_skipped_after_its_timeout() -> None:
    before = descendants()
    silent = McpServerSpec(name="silent", transport="stdio", command="sleep", args=("60",),
                           connect_timeout_s=0.5)
    async with McpManager([silent]) as mcp:
        assert mcp.tools() == []
        [warning] = mcp.warnings
        assert "did not start within 0.5 s" in warning.message
    assert descendants() - before == set()


async def test_a_warning_never_shows_a_configured_secret() -> None:
    leaky = McpServerSpec(name="leaky", transport="stdio", command="sh",
                          args=("-c", 'echo "starting with token=$API_TOKEN" >&2; exit 3'),
                          env={"API_TOKEN": "supersecret-123"})
    async with McpManager([leaky]) as mcp:
        [warning] = mcp.warnings
    assert "starting with token=[secret]" in warning.message
    assert "supersecret" not in warning.message + mcp.status()[0].detail


async def test_cancelling_the_run_while_servers_start_leaves_nothing_behind() -> None:
    before = descendants()
    silent = McpServerSpec(name="silent", transport="stdio", command="sleep", args=("60",),
                           connect_timeout_s=60)

    async def run() -> None:
        async with McpManager([silent, everything_spec()]):
            raise AssertionError("the manager must not finish starting")

    task = asyncio.create_task(run())
    await wait_until(lambda: len(descendants() - before) >= 2, what="the servers to spawn")
    started = asyncio.get_running_loop().time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert asyncio.get_running_loop().time() - started < 8  # stdio's close escalation: ~4 s
    # A spawn cut short by the cancellation is killed by asyncio itself and reaped by its child
    # watcher a moment later; every other process is already gone here.
    await wait_until(lambda: not descendants() - before, timeout_s=5, what="the last reaping")


async def test_a_server_killed_mid_call_gives_a_tool_error_not_a_crash(tmp_path: Path) -> None:
    marker = tmp_path / "running"
    async with McpManager([py_stdio_spec(sandbox=False)]) as mcp:
        pending = asyncio.create_task(
            call(mcp.registry, "mcp__py__hang", tmp_path, marker=str(marker)))
        await wait_until(marker.exists, what="the call to reach the server")
        [server] = [p for p in processes_running(str(PY_SERVER))  # not its supervisor
                    if p.cmdline()[1:] == [str(PY_SERVER)]]
        server.kill()
        with pytest.raises(ToolError, match="closed the connection during the call"):
            await pending
        with pytest.raises(ToolError, match="is not connected"):
            await call(mcp.registry, "mcp__py__echo", tmp_path, text="again")
        assert mcp.status()[0].state == "lost"
        assert any("stopped answering" in w.message for w in mcp.warnings)


async def test_cancelling_a_stdio_call_cancels_the_request(tmp_path: Path) -> None:
    marker = tmp_path / "running"
    async with McpManager([py_stdio_spec(sandbox=False)]) as mcp:
        pending = asyncio.create_task(
            call(mcp.registry, "mcp__py__hang", tmp_path, marker=str(marker)))
        await wait_until(marker.exists, what="the call to reach the server")
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        cancelled = tmp_path / "running.cancelled"
        await wait_until(cancelled.exists, what="the server to see notifications/cancelled")
        assert (await call(mcp.registry, "mcp__py__echo", tmp_path, text="x")).content == \
            "echo: x"


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_no_process_or_descriptor_is_left_after_a_run(sandbox: str, tmp_path: Path) -> None:
    async with McpManager([time_spec()], sandbox=sandbox):  # warm-up: lazy imports, probes
        pass
    homes = set(Path("/tmp").glob("confab-mcp-*"))
    before_pids, before_fds = descendants(), open_fds()
    async with McpManager([everything_spec(), time_spec(), py_stdio_spec()],
                          sandbox=sandbox) as mcp:
        assert [s.state for s in mcp.status()] == ["connected"] * 3
        assert len(descendants()) >= len(before_pids) + 3
        assert len(set(Path("/tmp").glob("confab-mcp-*")) - homes) == 3
        await call(mcp.registry, "mcp__everything__echo", tmp_path, message="x")
    # Nothing new survives the run (a descendant from before may end meanwhile: not a leak).
    assert descendants() - before_pids == set()
    assert open_fds() <= before_fds
    assert set(Path("/tmp").glob("confab-mcp-*")) == homes


@pytest.mark.parametrize("sandbox", ["off", "auto"])
async def test_helpers_a_server_started_end_when_it_closes_cleanly(sandbox: str) -> None:
    sleep, marker = marker_sleep()
    try:
        async with McpManager([py_stdio_spec(args=("--helpers", marker))],
                              sandbox=sandbox) as mcp:
            assert [s.state for s in mcp.status()] == ["connected"]
            assert len(sleeping(marker)) == 2  # one in the server's group, one outside it
        # The server exited by itself when its stdin closed (no kill from the SDK), and its
        # helpers, in its group or not, are gone with it.
        assert running(marker=marker) == []
    finally:
        kill_marked(marker)


@needs_sandbox
async def test_a_sandboxed_server_sees_only_its_own_files(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    async with McpManager([py_stdio_spec()]) as mcp:
        own = await call(mcp.registry, "mcp__py__read_file", tmp_path, path=str(PY_SERVER))
        hidden = await call(mcp.registry, "mcp__py__read_file", tmp_path, path=str(secret))
        config = await call(mcp.registry, "mcp__py__read_file", tmp_path,
                            path=str(Path(__file__).parents[4] / "pyproject.toml"))
    assert "build_server" in str(own.content) and not own.is_error
    assert hidden.is_error and "top secret" not in str(hidden.content)
    assert config.is_error


def test_the_sandbox_keeps_the_network_only_when_asked() -> None:
    spec = py_stdio_spec(env={"TOKEN": "x"})
    with_net = sandbox_argv("/usr/bin/bwrap", spec, Path("/tmp/home"), ["USER"])
    without = sandbox_argv("/usr/bin/bwrap", McpServerSpec(
        name="n", transport="stdio", command="x", network=False), Path("/tmp/home"), [])
    assert "--share-net" in with_net and "--share-net" not in without
    assert "--unshare-all" in with_net and "--die-with-parent" in with_net
    assert with_net[-2:] == [sys.executable, str(PY_SERVER)]
    assert "x" not in with_net[:-2] and "TOKEN" not in " ".join(with_net)  # secrets: env only
    assert with_net[with_net.index("--unsetenv") + 1] == "USER"


async def test_an_agent_run_calls_a_server_everything_tool(tmp_path: Path) -> None:
    script = {"script": [
        {"tool_call": {"name": "mcp__everything__echo", "arguments": {"message": "from run"}}},
        {"text": "The server echoed."},
    ]}
    history = [user(json.dumps(script))]
    async with McpManager([everything_spec()], registry=ToolRegistry()) as mcp:
        runner = AgentRunner(ScriptedProvider(), mcp.registry, RunConfig(model="scripted"),
                             history, run_id="run-mcp", workspace=tmp_path)
        events = await runner.run()
    assert events[-1] == RunEnded(status="completed", turns=2)
    [result] = [b for m in history for b in m.content if isinstance(b, ToolResultBlock)]
    assert result.name == "mcp__everything__echo" and not result.is_error
    assert result.content == "Echo: from run"
    assert any(isinstance(e, ToolResultEvent) and e.result == result for e in events)
    assert history[-1].text() == "The server echoed."
