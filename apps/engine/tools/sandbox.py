"""The bubblewrap sandbox for shell commands (DESIGN 4, "Shell").

Where ``bwrap`` is installed and works, a command runs the way mature agent sandboxes run it
(Codex's linux sandbox, Anthropic's sandbox-runtime, Flatpak):

- ``--unshare-all``: new user (where allowed), pid, ipc, uts, cgroup and **network** namespaces,
  so the command has no network at all (not even the host's loopback);
- ``--die-with-parent`` and the pid namespace: when our child (the outer ``bwrap``) dies, the
  namespace's init gets SIGKILL and the kernel kills every process in the namespace, so nothing
  escapes a kill, not even a process that called ``setsid``;
- ``--new-session``: no controlling terminal to push input into (TIOCSTI, CVE-2017-5226);
- the system directories (``/usr``, ``/bin``, ``/lib*``, ``/sbin``, ``/etc``) read-only, a fresh
  ``/tmp`` tmpfs, a minimal ``/dev`` and a ``/proc`` of the namespace, and the workspace as the
  only writable bind, with the run's read-only mounts (the team wiki's snapshot at ``wiki/``)
  bound over it with ``--ro-bind``. The rest of the host (home directories, the server's code
  and settings, other conversations' workspaces, other teams' wikis) is not there at all: a
  multi-tenant server cannot give every agent a read-only view of ``/`` as single-user
  sandboxes do;
- ``--cap-drop ALL`` and ``--clearenv`` with a minimal environment (:func:`minimal_env`), so no
  server secret reaches the command through its environment; ``HOME`` is an empty directory in
  the private ``/tmp`` (:data:`SANDBOX_HOME`), never the workspace, where a ``.gitconfig`` or
  any other dotfile would be the workspace's to write;
- resource limits set by the shell before it runs the command (:func:`limited_shell_argv`).

:func:`sandbox_status` probes once per ``bwrap`` path by starting a real sandbox with exactly
these flags, because an installed ``bwrap`` can still fail (user namespaces off in a container,
no setuid bit): a failed probe means "not sandboxed", with the reason, never a failing tool.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_PATH",
    "SANDBOX_HOME",
    "SandboxStatus",
    "aresolve_status",
    "bwrap_argv",
    "limited_shell_argv",
    "minimal_env",
    "probe_bwrap",
    "sandbox_status",
]

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SANDBOX_HOME = "/tmp/home"  # created empty in the sandbox's private /tmp, gone with it

# Mounted read-only when present; a merged-/usr link (Debian's /bin -> usr/bin) stays a link.
_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")

# Per-process limits (bash ``ulimit`` units): CPU seconds, file size in KiB, processes.
CPU_LIMIT_S = 660  # the longest Bash timeout (600 s) plus a margin: the wall clock decides first
FILE_SIZE_LIMIT_KIB = 1024 * 1024  # 1 GiB per file
PROCESS_LIMIT = 1024  # a fork bomb's ceiling; counted per user, so only inside the sandbox

_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """Whether commands run inside bubblewrap; ``reason`` is a sentence for people (the UI shows
    it), starting with "not sandboxed:" when ``active`` is false; ``bwrap`` the binary used."""

    active: bool
    reason: str
    bwrap: str | None = None


def minimal_env(home: Path | str) -> dict[str, str]:
    """The whole environment a command gets (sandboxed or not): nothing of the server's.
    ``home`` is its ``HOME``: a directory of its own, outside the workspace."""
    return {
        "PATH": DEFAULT_PATH,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",  # never wait on a password prompt: stdin is /dev/null
    }


def limited_shell_argv(bash: str, command: str, *, limit_processes: bool) -> list[str]:
    """``bash -c`` running ``command`` under rlimits (CPU time, file size, and processes when
    ``limit_processes``), as a non-login, non-interactive shell.

    An outer shell sets the limits and ``exec``s the inner one, so the command's ``$0``, line
    numbers and syntax errors are its own. A ``ulimit`` that fails means the inherited hard limit
    is already lower, which is as good, so failures are ignored. RLIMIT_NPROC counts every
    process of the user, so it is only safe inside the sandbox's own user namespace.
    """
    limits = [f"ulimit -t {CPU_LIMIT_S}", f"ulimit -f {FILE_SIZE_LIMIT_KIB}"]
    if limit_processes:
        limits.append(f"ulimit -u {PROCESS_LIMIT}")
    script = "; ".join(f"{limit} 2>/dev/null" for limit in limits) + '; exec "$0" -c "$1"'
    return [bash, "-c", script, bash, command]


def bwrap_argv(bwrap: str, workspace: Path, command_argv: Sequence[str], *,
               read_only: Mapping[str, Path] | None = None,
               env: Mapping[str, str] | None = None,
               host_read_only: Sequence[Path] = ()) -> list[str]:
    """The ``bwrap`` command line that runs ``command_argv`` confined to ``workspace``.

    ``workspace`` must be absolute and resolved; it is the working directory. ``read_only``:
    top-level names of the workspace and the resolved directories bound there read-only
    (``{"wiki": <snapshot>}``); bubblewrap makes the mount point if it is missing. ``env``: the
    command's whole environment (default :func:`minimal_env` of :data:`SANDBOX_HOME`, which
    exists, empty); ``TMPDIR`` is ``/tmp``. ``host_read_only``: absolute host directories bound
    read-only at their own paths (the git wrapper of a cleared command).
    Order matters: ``/tmp`` is mounted before the workspace and the host directories so those
    may live under the host's ``/tmp``, and the read-only binds after the workspace, over it.
    """
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
    argv += _system_mounts()
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--dir", SANDBOX_HOME]
    for path in host_read_only:
        argv += ["--ro-bind", str(path), str(path)]
    argv += ["--bind", str(workspace), str(workspace)]
    for name, source in sorted((read_only or {}).items()):
        argv += ["--ro-bind", str(source), str(workspace / name)]
    argv += ["--chdir", str(workspace)]
    argv += ["--cap-drop", "ALL", "--clearenv"]
    for name, value in (minimal_env(SANDBOX_HOME) if env is None else env).items():
        argv += ["--setenv", name, value]
    argv += ["--setenv", "TMPDIR", "/tmp", "--"]
    return argv + list(command_argv)


def _system_mounts() -> list[str]:
    """Read-only binds of the system directories this host has."""
    args: list[str] = []
    for path in _SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def probe_bwrap(bwrap: str) -> SandboxStatus:
    """Start one real sandbox with :func:`bwrap_argv`'s flags and report whether it ran.

    Blocking (up to 10 s); :func:`sandbox_status` caches the answer.
    """
    bash = shutil.which("bash", path=DEFAULT_PATH) or "/bin/bash"
    with tempfile.TemporaryDirectory(prefix="confab-bwrap-probe-") as tmp:
        workspace = Path(tmp).resolve()
        argv = bwrap_argv(bwrap, workspace, [bash, "-c", "echo ok > probe"])
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=_PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return SandboxStatus(False, f"not sandboxed: bwrap failed to start ({e})")
        if done.returncode != 0 or not (workspace / "probe").exists():
            detail = done.stderr.decode(errors="replace").strip().splitlines()
            why = detail[-1] if detail else f"exit status {done.returncode}"
            return SandboxStatus(False, f"not sandboxed: bwrap failed to start ({why})")
    return SandboxStatus(True, "sandboxed with bubblewrap (no network, workspace-only writes)",
                         bwrap)


@functools.cache
def _cached_probe(bwrap: str) -> SandboxStatus:
    return probe_bwrap(bwrap)


def resolve_status(setting: str = "auto", bwrap: str | None = None) -> SandboxStatus:
    """The sandbox commands get under ``setting`` ("auto" or "off"), with ``bwrap`` (default:
    ``bwrap`` on PATH). Probes once per binary and caches; blocking on the first call."""
    if setting == "off":
        return SandboxStatus(False, "not sandboxed: the sandbox is turned off in the settings")
    if setting != "auto":
        raise ValueError(f"unknown sandbox setting {setting!r} (expected 'auto' or 'off')")
    found = bwrap or shutil.which("bwrap", path=os.environ.get("PATH", DEFAULT_PATH))
    if found is None:
        return SandboxStatus(False, "not sandboxed: bubblewrap (bwrap) is not installed")
    return _cached_probe(found)


_RESOLVED: dict[tuple[str, str | None, str], SandboxStatus] = {}


async def aresolve_status(setting: str = "auto", bwrap: str | None = None) -> SandboxStatus:
    """:func:`resolve_status` for the event loop: the first call per ``setting``, ``bwrap`` and
    ``PATH`` probes in a thread, later ones answer at once. Runs call it every time (the Bash
    notice, the MCP servers), and a thread hop plus a ``PATH`` search each cost a few ms before
    the first model request. Raises ValueError as :func:`resolve_status` does."""
    key = (setting, bwrap, os.environ.get("PATH", DEFAULT_PATH))
    status = _RESOLVED.get(key)
    if status is None:
        status = _RESOLVED[key] = await asyncio.to_thread(resolve_status, setting, bwrap)
    return status


def sandbox_status(setting: str = "auto") -> tuple[bool, str]:
    """``(active, reason)`` for hosts to show: whether Bash commands run inside bubblewrap under
    the ``ToolEnvironment.sandbox`` setting, and why not. Blocking on the first call (a probe of
    at most 10 s); run it in a thread from async code."""
    status = resolve_status(setting)
    return status.active, status.reason
