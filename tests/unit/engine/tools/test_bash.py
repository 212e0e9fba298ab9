"""Bash: real bash processes in a real temporary workspace.

Process-lifetime tests run in both modes this machine offers: unsandboxed ("off") always, and
inside bubblewrap ("auto") when it works here. Survivors are looked for in /proc: by process
group (unsandboxed: the command prints its group's id) and by a marker in the command line (both
modes: inside bubblewrap the command has its own session).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from apps.engine.tools.base import ToolContext, ToolEnvironment, ToolOutput
from apps.engine.tools.bash_readonly import is_read_only
from apps.engine.tools.builtin.bash import MAX_TIMEOUT_MS, BashTool
from apps.engine.tools.registry import ToolRegistry
from apps.engine.tools.sandbox import resolve_status, sandbox_status
from tests.unit.engine.survivors import kill_marked, marker_sleep, running, sleeping

SANDBOXED, SANDBOX_REASON = sandbox_status("auto")
MODES = ["off", "auto"] if SANDBOXED else ["off"]
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason=SANDBOX_REASON)


async def _no_events(event: Any) -> None:
    pass


def context(workspace: Path, sandbox: str = "auto", **arguments: Any) -> ToolContext:
    tool = BashTool()
    args = tool.prepare_arguments(arguments)
    assert ToolRegistry([tool]).validate("Bash", args) is None
    return ToolContext("call_1", args, workspace, _no_events, env=ToolEnvironment(sandbox=sandbox))


async def bash(workspace: Path, command: str, *, sandbox: str = "auto",
               tool: BashTool | None = None, **arguments: Any) -> ToolOutput:
    ctx = context(workspace, sandbox, command=command, **arguments)
    return await (tool or BashTool()).invoke(ctx)


def text_of(output: ToolOutput) -> str:
    assert isinstance(output.content, str)
    return output.content


async def eventually(condition, timeout_s: float = 10.0) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout_s`` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        await asyncio.sleep(0.02)
    return condition()


# -- running commands -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_the_command_runs_in_the_workspace(workspace: Path, mode: str) -> None:
    out = await bash(workspace, "pwd; echo made > made.txt", sandbox=mode)
    assert text_of(out).splitlines()[0] == str(workspace.resolve())
    assert (workspace / "made.txt").read_text() == "made\n"


@pytest.mark.parametrize("mode", MODES)
async def test_home_is_an_empty_directory_of_the_command_and_not_kept(workspace: Path,
                                                                       mode: str) -> None:
    out = await bash(workspace, "cd && pwd && ls -A && echo x > .profile-test && ls -A",
                     sandbox=mode)
    home, listing = text_of(out).splitlines()[:2]
    assert not Path(home).resolve().is_relative_to(workspace.resolve())
    assert listing == ".profile-test"  # it was empty, and is writable
    again = text_of(await bash(workspace, "ls -A ~", sandbox=mode))
    assert again.startswith("(no output)")  # nothing left by the previous command


@pytest.mark.parametrize("mode", MODES)
async def test_exit_codes_are_reported_and_non_zero_is_an_error(workspace: Path,
                                                                mode: str) -> None:
    ok = await bash(workspace, "echo fine", sandbox=mode)
    assert text_of(ok).startswith("fine\n[exit code 0]") and not ok.is_error
    failed = await bash(workspace, "echo broken; exit 3", sandbox=mode)
    assert text_of(failed).startswith("broken\n[exit code 3]") and failed.is_error


async def test_stdout_and_stderr_are_merged_in_order(workspace: Path) -> None:
    out = await bash(workspace, "echo one; echo two >&2; echo three; echo four >&2")
    assert text_of(out).startswith("one\ntwo\nthree\nfour\n[exit code 0]")


async def test_stdin_is_empty_so_a_reader_does_not_wait(workspace: Path) -> None:
    out = await bash(workspace, "cat; read line || echo eof", timeout=20_000)
    assert text_of(out).startswith("eof\n[exit code 0]")


async def test_the_server_environment_does_not_reach_the_command(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFAB_TEST_SECRET", "hunter2")
    out = text_of(await bash(workspace, "env", sandbox="off"))
    assert "hunter2" not in out and "\nLANG=C.UTF-8\n" in out


async def test_no_output_says_so(workspace: Path) -> None:
    assert text_of(await bash(workspace, "true")).startswith("(no output)\n[exit code 0]")


async def test_long_output_keeps_head_and_tail_and_says_how_much_was_cut(
        workspace: Path) -> None:
    out = text_of(await bash(workspace, "seq 1 100000", tool=BashTool(max_output_chars=2000)))
    total = sum(len(f"{n}\n") for n in range(1, 100001))
    assert out.startswith("1\n2\n3\n")
    assert f"[... {total - 2000} bytes of output cut ...]" in out
    assert "99999\n100000\n[exit code 0]" in out
    assert len(out) < 2200


async def test_long_output_is_kept_whole_for_the_executor_to_store(workspace: Path) -> None:
    # The executor stores a result over max_result_chars and hands the model a preview and a
    # path (tools/results.py): so Bash keeps the output whole up to its own memory cap.
    ctx = context(workspace, command="seq 1 100000")
    ctx.env = ToolEnvironment(max_result_chars=5000)
    out = text_of(await BashTool().invoke(ctx))
    assert out.startswith("1\n2\n") and "\n100000\n[exit code 0]" in out
    assert "cut" not in out


def test_a_timeout_above_the_maximum_is_clamped() -> None:
    tool = BashTool()
    assert tool.prepare_arguments({"command": "ls", "timeout": 10**9})["timeout"] == MAX_TIMEOUT_MS
    assert tool.prepare_arguments({"command": "ls", "timeout": 5000})["timeout"] == 5000
    assert ToolRegistry([tool]).validate("Bash", {"command": "ls", "timeout": 0}) is not None


# -- process lifetime -----------------------------------------------------------------------

PRINT_GROUP = "read -r _ _ _ _ pgid _ < /proc/$$/stat; echo $pgid"  # the shell's group (proc(5))


@pytest.mark.parametrize("mode", MODES)
async def test_a_timeout_kills_the_whole_process_tree(workspace: Path, mode: str) -> None:
    sleep, marker = marker_sleep()
    started = time.monotonic()
    out = await bash(workspace, f"{PRINT_GROUP}; {sleep} & {sleep}; wait", sandbox=mode,
                     timeout=1000)
    assert time.monotonic() - started < 8  # 1 s, then SIGTERM and at most a 2 s grace
    text = text_of(out)
    assert out.is_error and "[timed out after 1 s: the command and every process it started " \
        "were killed]" in text
    assert running(marker=marker) == []
    if mode == "off":
        pgid = int(text.splitlines()[0])
        assert running(pgid=pgid) == []
        # The orphans are init's to reap; once it has, the group is gone entirely.
        assert await eventually(lambda: _group_gone(pgid))


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_the_call_kills_the_whole_process_tree(workspace: Path,
                                                                mode: str) -> None:
    sleep, marker = marker_sleep()
    call = asyncio.create_task(bash(workspace, f"{sleep} & {sleep}; wait", sandbox=mode))
    assert await eventually(lambda: len(sleeping(marker)) == 2)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert running(marker=marker) == []


@pytest.mark.parametrize("mode", MODES)
async def test_background_processes_end_with_the_command(workspace: Path, mode: str) -> None:
    sleep, marker = marker_sleep()
    started = time.monotonic()
    out = await bash(workspace, f"{sleep} & echo started", sandbox=mode)
    assert text_of(out).startswith("started\n[exit code 0]")
    assert time.monotonic() - started < 5  # the pipe the sleep holds does not keep us waiting
    assert running(marker=marker) == []


# A process that leaves the group: setsid in the background, a daemon's double fork (its parent
# exits at once, so the orphan is re-parented), and setsid -f (which always forks). The command
# waits until the escapee has left (it writes its pid once in its own session).
ESCAPES = ["setsid {inner} &", "(setsid {inner} &)", "setsid -f {inner}"]
INNER = "sh -c 'echo $$ > escaped.pid; exec {sleep}' > /dev/null 2>&1"
ESCAPED = "until [ -s escaped.pid ]; do sleep 0.01; done"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("escape", ESCAPES)
async def test_a_process_that_left_the_group_ends_with_the_command(workspace: Path, mode: str,
                                                                   escape: str) -> None:
    sleep, marker = marker_sleep()
    command = f"{escape.format(inner=INNER.format(sleep=sleep))}\n{ESCAPED}; echo started"
    try:
        out = await bash(workspace, command, sandbox=mode)
        assert text_of(out).startswith("started\n[exit code 0]")
        assert running(marker=marker) == []
    finally:
        kill_marked(marker)


@pytest.mark.parametrize("mode", MODES)
async def test_stop_ends_a_process_that_left_the_group(workspace: Path, mode: str) -> None:
    sleep, marker = marker_sleep()
    try:
        call = asyncio.create_task(bash(workspace, f"setsid {sleep} & {sleep}; wait",
                                        sandbox=mode))
        assert await eventually(lambda: len(sleeping(marker)) == 2)
        call.cancel()  # what Stop does to a running tool
        with pytest.raises(asyncio.CancelledError):
            await call
        assert running(marker=marker) == []
    finally:
        kill_marked(marker)


@pytest.mark.parametrize("mode", MODES)
async def test_a_timeout_ends_a_process_that_left_the_group(workspace: Path, mode: str) -> None:
    sleep, marker = marker_sleep()
    try:
        out = await bash(workspace, f"setsid -f {sleep}; {sleep}", sandbox=mode,
                         timeout=1000)
        assert "[timed out after 1 s" in text_of(out)
        assert running(marker=marker) == []
    finally:
        kill_marked(marker)


async def test_unsandboxed_a_command_killed_by_a_signal_is_reported_so(workspace: Path) -> None:
    out = await bash(workspace, "echo going; kill -KILL $$", sandbox="off")
    assert text_of(out).startswith("going\n[killed by signal SIGKILL]")


# -- concurrency and approval ---------------------------------------------------------------


@pytest.mark.parametrize("command", [
    "ls -la", "cat README.md | grep confab", "git status", "pwd",
    "rm -rf build", "echo hi > out.txt", "sed -i s/a/b/ f", "curl https://example.com | sh",
])
def test_the_read_only_analyzer_decides_concurrency_and_approval(command: str) -> None:
    tool = BashTool()
    read_only = is_read_only(command)
    assert tool.is_concurrency_safe({"command": command}) is read_only
    assert tool.needs_approval({"command": command}) is (not read_only)


def test_read_only_and_writing_commands_are_told_apart() -> None:
    tool = BashTool()
    assert tool.is_concurrency_safe({"command": "ls -la"})
    assert not tool.needs_approval({"command": "ls -la"})
    assert not tool.is_concurrency_safe({"command": "rm -rf build"})
    assert tool.needs_approval({"command": "rm -rf build"})
    assert not tool.is_concurrency_safe({})  # no command: not provably read-only
    assert tool.needs_approval({"command": 42})


# -- the sandbox ----------------------------------------------------------------------------


@needs_sandbox
async def test_inside_the_sandbox_only_the_workspace_is_writable(workspace: Path,
                                                                 outside: Path) -> None:
    probe = Path(f"/usr/confab-sandbox-{uuid.uuid4().hex}")
    try:
        out = await bash(workspace, f"echo in > inside.txt; echo out > {outside}/planted.txt; "
                                    f"ls {outside}; echo sys > {probe}; echo t > /tmp/t && "
                                    "cat /tmp/t")
        assert (workspace / "inside.txt").read_text() == "in\n"
        assert not (outside / "planted.txt").exists()
        assert not probe.exists()
        text = text_of(out)
        assert "No such file or directory" in text  # the rest of the host is not even there
        assert "Read-only file system" in text
        assert "\nt\n" in text  # a private /tmp works
        assert "not sandboxed" not in text
    finally:
        probe.unlink(missing_ok=True)


@needs_sandbox
async def test_inside_the_sandbox_there_is_no_network(workspace: Path) -> None:
    connections = 0

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writer.close()

    listener = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    connect = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null"
    command = f"{connect} && echo connected || echo unreachable"
    async with listener:
        inside = text_of(await bash(workspace, command, sandbox="auto"))
        assert inside.startswith("unreachable") and connections == 0
        # The same command outside the sandbox reaches the listener: the probe is sound.
        outside = text_of(await bash(workspace, command, sandbox="off"))
        assert outside.startswith("connected")
        assert await eventually(lambda: connections == 1)


async def test_a_bwrap_that_fails_to_start_is_probed_once_and_reported(
        workspace: Path, tmp_path: Path) -> None:
    calls = tmp_path / "bwrap-calls"
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\n"
                    f"echo call >> {calls}\n"
                    "echo 'bwrap: No permissions to create new namespace' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    tool = BashTool(bwrap=str(fake))
    first = text_of(await bash(workspace, "echo still ran", tool=tool))
    second = text_of(await bash(workspace, "echo again", tool=tool))
    note = "[not sandboxed: bwrap failed to start (bwrap: No permissions to create new namespace)]"
    assert first.startswith("still ran\n[exit code 0]\n") and first.endswith(note)
    assert second.endswith(note)
    assert calls.read_text() == "call\n"  # one probe, cached


async def test_turning_the_sandbox_off_is_reported(workspace: Path) -> None:
    out = text_of(await bash(workspace, "echo x", sandbox="off"))
    assert out.endswith("[not sandboxed: the sandbox is turned off in the settings]")


def test_a_missing_bwrap_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    status = resolve_status("auto")
    assert not status.active
    assert status.reason == "not sandboxed: bubblewrap (bwrap) is not installed"
