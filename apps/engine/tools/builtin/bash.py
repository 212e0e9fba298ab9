"""Bash: one shell command in the conversation's workspace (DESIGN 2.5, 4 "Shell").

The command runs as ``bash -c`` (non-login, non-interactive) with the workspace as its working
directory, stdin ``/dev/null``, a minimal environment (none of the server's variables), and
CPU-time and file-size limits. ``HOME`` is an empty directory of the command's own, never the
workspace (a ``.gitconfig`` or ``.bashrc`` there would be the workspace's to write), removed
after it. It runs inside bubblewrap when the host has a working ``bwrap`` and
``ToolEnvironment.sandbox`` is "auto" (:mod:`apps.engine.tools.sandbox`); otherwise the result
says "not sandboxed: <why>". A command the read-only analyzer clears runs its git guarded
(:mod:`apps.engine.tools.git_guard`): no program the workspace names starts without approval.

The run's read-only mounts (the team wiki at ``wiki/``) are bound read-only inside the sandbox.
Without the sandbox they are not there at all: an unsandboxed command runs with the server's
own rights, so a symbolic link or a bind would only pretend to be read-only; the result says
so when the command names a mount, and points to Read, Glob and Grep, which see it.

Process lifetime: the command gets its own session and process group (``start_new_session``).
When the shell exits, when the timeout passes, and when the invoking task is cancelled (Stop),
the whole group gets SIGTERM, then SIGKILL after a short grace, and the shell is reaped, so
nothing the command started in the background outlives the call. A process that left the group
(``setsid``, a daemon's double fork) is ended too, sandboxed or not: the command runs under a
child subreaper (:mod:`apps.engine.tools.subreaper`) that ends every descendant before it exits.
(Bubblewrap's pid namespace would end them as well, but only after its monitor process has
exited: the namespace is torn down a moment later, so a call could return with them alive.)

stdout and stderr are one pipe, so they interleave in the order they were written. The output
is capped (head and tail kept, the number of bytes cut said in between).

Arguments follow Claude Code's Bash tool: ``command``; ``timeout`` in milliseconds (default
120000, at most 600000); ``description`` (a few words for people; not used).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apps.engine.errors import ToolError
from apps.engine.tools import git_guard
from apps.engine.tools.base import BaseTool, Concurrency, ToolContext, ToolOutput, ToolSpec
from apps.engine.tools.bash_readonly import is_read_only
from apps.engine.tools.mounts import ReadOnlyMounts
from apps.engine.tools.results import LARGE_RESULT_NOTE
from apps.engine.tools.sandbox import (
    DEFAULT_PATH,
    SANDBOX_HOME,
    SandboxStatus,
    aresolve_status,
    bwrap_argv,
    limited_shell_argv,
    minimal_env,
    sandbox_status,
)
from apps.engine.tools.subreaper import proc_stat, supervised_argv
from apps.engine.tools.workspace import workspace_root

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "MAX_OUTPUT_CHARS",
    "MAX_TIMEOUT_MS",
    "BashTool",
    "ProcessResult",
    "run_in_process_group",
    "sandbox_status",
    "terminate_group",
]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 2_000_000  # kept in memory (head and tail); the executor stores what is long

_KILL_GRACE_S = 2.0  # SIGTERM -> SIGKILL
# The subreaper gives the command's descendants _KILL_GRACE_S and then needs a moment to kill
# and reap them: our SIGKILL to the group must not cut that short (the tree would escape).
_SUPERVISED_GRACE_S = _KILL_GRACE_S + 3.0
_DRAIN_GRACE_S = 0.5  # for the pipe's end of file once the group is dead (an escaped holder)
_POLL_S = 0.02

_DESCRIPTION = f"""\
Run a bash command in the conversation's workspace (the working directory) and return its \
combined stdout and stderr and its exit code.

- `timeout` is in milliseconds: default {DEFAULT_TIMEOUT_MS} ({DEFAULT_TIMEOUT_MS // 60_000} \
minutes), at most {MAX_TIMEOUT_MS} ({MAX_TIMEOUT_MS // 60_000} minutes). On timeout the command \
and everything it started are killed.
- stdin is empty; interactive programs and password prompts will not work.
- Processes left running in the background are stopped when the command ends.
- {LARGE_RESULT_NOTE} Output over {MAX_OUTPUT_CHARS:,} bytes keeps only its beginning and \
its end.
- Where the sandbox is active there is no network access and only the workspace (and /tmp, \
which is discarded) is writable; the result says when a command was not sandboxed.
- HOME is an empty directory that is removed after each command: set git's identity with \
`git config user.name ...` in the repository, not with --global.
- Prefer Read, Grep and Glob for reading and searching files."""


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """How a command ended: ``output`` (capped text), ``returncode`` (negative: killed by that
    signal), ``timed_out``, ``cut_bytes`` (output bytes left out of ``output``)."""

    output: str
    returncode: int
    timed_out: bool
    cut_bytes: int


class _HeadTail:
    """Keeps the first and the last ``limit // 2`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self._half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(len(self.tail) - self._half, 0)]

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        if not self.cut:
            return bytes(self.head + self.tail).decode(errors="replace")
        head = self.head.decode(errors="replace")
        tail = self.tail.decode(errors="replace")
        return f"{head}\n\n[... {self.cut} bytes of output cut ...]\n\n{tail}"


class _Capture(asyncio.SubprocessProtocol):
    """Collects the merged output and reports the leader's exit and the pipe's end separately.

    asyncio's ``Process.wait()`` returns only once the pipes are closed too, which a process
    left in the background keeps open; ``process_exited`` fires when the leader is reaped.
    """

    def __init__(self, sink: _HeadTail) -> None:
        loop = asyncio.get_running_loop()
        self.sink = sink
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.sink.add(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def _signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to the group; False when no process of it is left."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):  # EPERM: only zombies left (some kernels)
        return False
    return True


def _live_in_group(pgid: int) -> bool:
    """Whether a process of the group still runs. Zombies do not count: they are dead, and the
    orphans among them are for init to reap (some container inits reap only every few seconds)."""
    if not _signal_group(pgid, 0):
        return False
    try:
        entries = os.listdir("/proc")
    except FileNotFoundError:  # no procfs: the kill probe is all we know
        return True
    return any(_running_member(entry, pgid) for entry in entries if entry.isdigit())


def _running_member(pid: str, pgid: int) -> bool:
    """Whether /proc/<pid> is a process of ``pgid`` that is not a zombie."""
    stat = proc_stat(pid)
    return stat is not None and stat.pgrp == pgid and stat.state not in ("Z", "X")


async def _group_dead(pgid: int) -> None:
    """Return once no process of the group runs."""
    while _live_in_group(pgid):
        await asyncio.sleep(_POLL_S)


async def terminate_group(pgid: int, exited: asyncio.Future[None],
                          grace_s: float = _KILL_GRACE_S) -> None:
    """Stop the process group ``pgid`` and wait until its leader is reaped (``exited``).

    SIGTERM first so programs can clean up, SIGKILL to whatever still runs after ``grace_s``
    seconds. The SIGKILL is sent even when this coroutine is cancelled during the grace.
    """
    try:
        if _signal_group(pgid, signal.SIGTERM):
            async with asyncio.timeout(grace_s):
                await _group_dead(pgid)
    except TimeoutError:
        pass
    finally:
        _signal_group(pgid, signal.SIGKILL)
        await asyncio.wait({exited})  # never cancels the future


async def run_in_process_group(argv: list[str], *, cwd: Path, env: dict[str, str],
                               timeout_s: float, max_output: int,
                               grace_s: float = _KILL_GRACE_S) -> ProcessResult:
    """Run ``argv`` in a new session and process group with stdin ``/dev/null`` and stdout and
    stderr merged; keep at most ``max_output`` bytes of output (head and tail).

    Ends when the leader exits (what it left running in the group is then killed) or after
    ``timeout_s`` seconds (the whole group is killed, ``timed_out``). Cancelling the calling
    task kills the whole group too before the CancelledError propagates. Killing is SIGTERM,
    then SIGKILL after ``grace_s`` seconds. Raises OSError when ``argv`` cannot be started.
    """
    sink = _HeadTail(max_output)
    transport, capture = await asyncio.get_running_loop().subprocess_exec(
        lambda: _Capture(sink), *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)
    try:
        done, _ = await asyncio.wait({capture.exited}, timeout=timeout_s)
    finally:
        # Output already in the pipe stays readable once its writers are gone; a process that
        # escaped the group (setsid) could hold the pipe open, hence the bounded drain.
        await terminate_group(transport.get_pid(), capture.exited, grace_s)
        await asyncio.wait({capture.output_closed}, timeout=_DRAIN_GRACE_S)
        transport.close()
    returncode = transport.get_returncode()
    assert returncode is not None
    return ProcessResult(sink.text(), returncode, not done, sink.cut)


def _timeout_ms(arguments: dict[str, Any]) -> int:
    """The call's timeout in milliseconds, defaulted and clamped."""
    value = arguments.get("timeout")
    if not isinstance(value, int) or isinstance(value, bool):
        return DEFAULT_TIMEOUT_MS
    return max(1, min(value, MAX_TIMEOUT_MS))


def _command_read_only(arguments: dict[str, Any]) -> bool:
    """What the read-only analyzer says of the call's command (no command: not read-only)."""
    command = arguments.get("command")
    return isinstance(command, str) and is_read_only(command)


def _bash() -> str:
    """The bash binary, looked up on the commands' PATH (the same path inside the sandbox)."""
    found = shutil.which("bash", path=DEFAULT_PATH)
    if found is None:
        raise ToolError("bash is not installed on this server.")
    return found


async def _read_only_binds(workspace: Path, mounts: ReadOnlyMounts | None,
                           notes: list[str]) -> dict[str, Path]:
    """The run's read-only mounts to bind inside the sandbox (resolved in a thread: the first
    use may build the wiki's snapshot). A name the workspace holds as a file or a symbolic link
    is not bound (the link would move the mount elsewhere inside the sandbox); ``notes`` says so.
    """
    if not mounts:
        return {}
    binds = await asyncio.to_thread(mounts.resolved)
    for name in list(binds):
        point = workspace / name
        if point.is_symlink() or (point.exists() and not point.is_dir()):
            del binds[name]
            notes.append(f"[{name}/ is not mounted in this command: the workspace holds a file "
                         f"or link named {name!r}; rename it to see {name}/ here]")
    return binds


def _describe_end(result: ProcessResult, timeout_ms: int) -> str:
    """The line after the output that says how the command ended."""
    if result.timed_out:
        return (f"[timed out after {timeout_ms / 1000:g} s: the command and every process it "
                "started were killed]")
    if result.returncode < 0:
        return f"[killed by signal {signal.Signals(-result.returncode).name}]"
    return f"[exit code {result.returncode}]"


class BashTool(BaseTool):
    """``Bash {command, timeout?, description?}``: see the module docstring.

    ``bwrap``: the bubblewrap binary to use (default: ``bwrap`` on PATH); ``max_output_chars``:
    the output cap. Concurrency and approval follow the read-only analyzer: a read-only command
    may run beside others and needs no approval; any other command runs alone and asks.
    """

    spec = ToolSpec(
        name="Bash",
        description=_DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run."},
                "timeout": {"type": "integer", "minimum": 1,
                            "description": "Timeout in milliseconds (default 120000, "
                                           "max 600000)."},
                "description": {"type": "string",
                                "description": "What the command does, in 5-10 words."},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        concurrency=Concurrency.INPUT_DEPENDENT,
        requires_approval=True,
        # Our own timeout (at most 600 s) ends the command first and says so; the executor's
        # is a backstop for the kill and the reap.
        timeout_s=MAX_TIMEOUT_MS / 1000 + 30,
    )

    def __init__(self, *, bwrap: str | None = None,
                 max_output_chars: int = MAX_OUTPUT_CHARS) -> None:
        self._bwrap = bwrap
        self._max_output = max_output_chars

    def is_concurrency_safe(self, arguments: dict[str, Any]) -> bool:
        """Read-only commands (per the analyzer) may run beside other safe calls."""
        return _command_read_only(arguments)

    def needs_approval(self, arguments: dict[str, Any]) -> bool:
        """Every command the analyzer cannot prove read-only."""
        return not _command_read_only(arguments)

    def prepare_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Clamp a ``timeout`` above the maximum instead of failing the call."""
        timeout = arguments.get("timeout")
        if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > MAX_TIMEOUT_MS:
            return {**arguments, "timeout": MAX_TIMEOUT_MS}
        return arguments

    def _output_cap(self, ctx: ToolContext) -> int:
        """Output bytes kept in memory (head and tail). A result longer than the environment's
        ``max_result_chars`` is stored in the workspace by the executor, so the model gets a
        preview and a path it can Read — the full output, up to this cap."""
        return self._max_output

    async def sandbox(self, setting: str) -> SandboxStatus:
        """The sandbox commands get under ``setting`` (probed once, in a thread)."""
        return await aresolve_status(setting, self._bwrap)

    async def unconfined_notice(self, setting: str) -> str | None:
        """The sentence a host shows people when commands run without the sandbox under
        ``setting`` (None when they run inside it)."""
        status = await self.sandbox(setting)
        if status.active:
            return None
        return (f"Bash runs unconfined in this run ({status.reason}): its commands can reach "
                "the network, every file and every process the server's user can. Stop "
                "ends the processes they start, unless a command kills its supervisor on "
                "purpose.")

    async def invoke(self, ctx: ToolContext) -> ToolOutput:
        command = ctx.arguments["command"]
        if not command.strip():
            raise ToolError("The command is empty.")
        timeout_ms = _timeout_ms(ctx.arguments)
        workspace = workspace_root(ctx.workspace)
        status = await self.sandbox(ctx.env.sandbox)
        notes: list[str] = []
        scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="confab-bash-"))
        try:
            shell, env = await _launch(command, workspace, status, scratch, ctx.mounts, notes)
            result = await run_in_process_group(
                supervised_argv(shell, grace_s=_KILL_GRACE_S), cwd=workspace, env=env,
                timeout_s=timeout_ms / 1000, max_output=self._output_cap(ctx),
                grace_s=_SUPERVISED_GRACE_S)
        except (OSError, ValueError) as e:  # ValueError: a NUL byte in the command
            raise ToolError(f"The command could not be started: {e}") from e
        finally:
            await asyncio.to_thread(shutil.rmtree, scratch, ignore_errors=True)
        lines = [result.output.rstrip("\n") or "(no output)", _describe_end(result, timeout_ms)]
        if not status.active:
            lines.append(f"[{status.reason}]")
        lines.extend(notes)
        failed = result.timed_out or result.returncode != 0
        return ToolOutput("\n".join(lines), is_error=failed)


async def _launch(command: str, workspace: Path, status: SandboxStatus, scratch: Path,
                  mounts: ReadOnlyMounts | None, notes: list[str]
                  ) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run ``command``: inside bubblewrap when ``status`` is
    active, ``HOME`` outside the workspace (``scratch``, a directory of this call, when not
    sandboxed), and git guarded when the analyzer clears the command. ``notes`` gets what the
    result should say about the mounts."""
    sandboxed = status.active and status.bwrap is not None
    home = Path(SANDBOX_HOME) if sandboxed else scratch / "home"
    if not sandboxed:
        home.mkdir()
    env = minimal_env(home)
    guard = None
    if is_read_only(command):
        guard = await asyncio.to_thread(git_guard.install, scratch / "bin")
        env = git_guard.guarded_env(env, guard)
    shell = limited_shell_argv(_bash(), command, limit_processes=sandboxed)
    if sandboxed:
        assert status.bwrap is not None
        read_only = await _read_only_binds(workspace, mounts, notes)
        shell = bwrap_argv(status.bwrap, workspace, shell, read_only=read_only, env=env,
                           host_read_only=[guard] if guard else [])
    elif mounts:
        notes.extend(f"[{name}/ is mounted only inside the sandbox, and this command was "
                     f"not sandboxed: use Read, Glob or Grep on {name}/ instead]"
                     for name in mounts.names() if name in command)
    return shell, env
