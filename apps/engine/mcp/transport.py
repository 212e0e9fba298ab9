"""Opening one MCP server's transport with the MCP SDK (DESIGN 2.7, 4 "SSRF", "MCP stdio").

**stdio.** The server is a child process of ours (the SDK's ``stdio_client``: its own process
group, stdin closed then SIGTERM then SIGKILL to the group on exit). The SDK kills the group only
when the server hangs on exit, and a group never holds what left it (``setsid``), so a server
that exits cleanly when its stdin closes would leave its helper processes running: the server
runs under the child subreaper of :mod:`apps.engine.tools.subreaper`, which ends every
descendant once the server has exited or been signalled, whenever and however the connection
is closed (the end of a run, an admin's probe, a pool closing a server).

Its environment is cleared: it gets :func:`~apps.engine.tools.sandbox.minimal_env` (with its
own temporary directory as ``HOME`` and working directory) plus the spec's ``env``, and nothing
of the server's own environment. The SDK merges a few variables of ours (``HOME``, ``LOGNAME``,
``PATH``, ``SHELL``, ``TERM``, ``USER``) into every child's environment; those the spec does not
set are removed again by ``bwrap --unsetenv`` or ``env -u``, so the configured secrets travel in
the environment and never on a command line (``/proc/<pid>/cmdline`` is readable by every local
user).

Where bubblewrap works (the probe of :mod:`apps.engine.tools.sandbox`) and the spec asks for it,
the process runs inside ``bwrap`` with the Bash sandbox's confinement of the **filesystem**: new
user, pid, ipc, uts and cgroup namespaces, ``--die-with-parent``, ``--new-session``, every
capability dropped, the system directories read-only, a private ``/tmp``, the spec's
``read_paths`` read-only (the server's own installation), and its temporary home the only
writable directory; the rest of the host (other teams' workspaces, the server's code, settings
and data) is not there. The **network** is kept (``--share-net``) when ``spec.network`` is true,
because most useful servers call an API; bubblewrap cannot filter addresses, so such a server can
reach what the host reaches, loopback services included. ``network=False`` gives it none.

**HTTP.** The URL is checked by the SSRF guard first (a clear refusal), and every request of the
SDK's transport then goes through :class:`~apps.engine.tools.net.GuardedTransport` (resolve once,
check every address, connect to the checked one, no proxies from the environment). The SDK
follows redirects itself, only within the endpoint's origin.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from apps.engine.mcp.config import McpServerSpec
from apps.engine.tools.net import GuardedTransport, NetworkPolicy, Resolver, check_url
from apps.engine.tools.sandbox import DEFAULT_PATH, SandboxStatus, _system_mounts, minimal_env
from apps.engine.tools.subreaper import supervised_argv

__all__ = ["HTTP_TIMEOUT_S", "StdioLaunch", "open_transport", "sandbox_argv", "stdio_launch"]

HTTP_TIMEOUT_S = 30.0  # connect, write, pool; reads wait longer (a server may hold a stream open)
HTTP_READ_TIMEOUT_S = 300.0
# SIGTERM -> SIGKILL for a stdio server's helpers once it has exited: inside the 2 s the SDK
# waits after closing stdin (mcp.client.stdio.PROCESS_TERMINATION_TIMEOUT) before it signals.
HELPER_GRACE_S = 1.0


@dataclass(frozen=True, slots=True)
class StdioLaunch:
    """How a stdio server is started: the SDK's ``params``, whether it is ``sandboxed``, and a
    ``note`` for people ("sandboxed ..." or "not sandboxed: <why>")."""

    params: StdioServerParameters
    sandboxed: bool
    note: str


def stdio_launch(spec: McpServerSpec, home: Path, status: SandboxStatus) -> StdioLaunch:
    """The launch of the stdio server ``spec`` with ``home`` as its home and working directory,
    inside bubblewrap when ``status`` is active and the spec wants it."""
    assert spec.command is not None
    sandboxed = status.active and spec.sandbox and status.bwrap is not None
    env = minimal_env(home) | {"TMPDIR": "/tmp" if sandboxed else str(home)} | dict(spec.env)
    unset = [name for name in DEFAULT_INHERITED_ENV_VARS if name not in env]
    if sandboxed:
        assert status.bwrap is not None
        argv = sandbox_argv(status.bwrap, spec, home, unset)
        network = "with the host's network" if spec.network else "without network"
        note = f"sandboxed with bubblewrap (filesystem confined, {network})"
    else:
        env_binary = shutil.which("env", path=DEFAULT_PATH) or "/usr/bin/env"
        argv = [env_binary, *_each("-u", unset), "--", spec.command, *spec.args]
        note = ("not sandboxed: turned off for this server" if not spec.sandbox
                else status.reason)
    argv = supervised_argv(argv, grace_s=HELPER_GRACE_S)  # also sandboxed: see the Bash tool
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=home)
    return StdioLaunch(params, sandboxed, note)


def sandbox_argv(bwrap: str, spec: McpServerSpec, home: Path, unset: Sequence[str]
                 ) -> list[str]:
    """The ``bwrap`` command line that runs the stdio server ``spec`` (see the module doc).

    Order matters: ``/tmp`` is mounted before the read paths and ``home``, so those may live
    under the host's ``/tmp``.
    """
    assert spec.command is not None
    argv = [bwrap, "--unshare-all"]
    if spec.network:
        argv.append("--share-net")
    argv += ["--die-with-parent", "--new-session"]
    argv += _system_mounts()
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in spec.read_paths:
        real = os.path.realpath(path)
        argv += ["--ro-bind", real, real]
        if real != os.path.abspath(path):  # a symlinked path: it names the same place
            argv += ["--symlink", real, os.path.abspath(path)]
    argv += ["--bind", str(home), str(home), "--chdir", str(home)]
    argv += ["--cap-drop", "ALL", *_each("--unsetenv", unset), "--"]
    return argv + [spec.command, *spec.args]


def _each(flag: str, names: Sequence[str]) -> list[str]:
    return [part for name in names for part in (flag, name)]


@asynccontextmanager
async def open_transport(spec: McpServerSpec, *, launch: StdioLaunch | None = None,
                         errlog: TextIO | None = None, policy: NetworkPolicy | None = None,
                         resolver: Resolver | None = None) -> AsyncIterator[Any]:
    """The SDK transport of ``spec`` (an async context of its read and write streams).

    stdio needs ``launch`` and ``errlog`` (the file the server's stderr goes to); HTTP needs
    ``policy``. Raises UrlRefused (a ToolError) for a URL the guard refuses, OSError when the
    process cannot start, httpx2 errors when the server cannot be reached.
    """
    if spec.transport == "stdio":
        assert launch is not None and errlog is not None
        async with stdio_client(launch.params, errlog=errlog) as streams:
            yield streams
        return
    assert spec.url is not None and policy is not None
    await check_url(spec.url, policy, resolver)
    if spec.transport == "streamable_http":
        async with _guarded_client(policy, resolver, spec.headers, auth=spec.auth) as client, \
                streamable_http_client(spec.url, http_client=client) as streams:
            yield streams
        return

    def factory(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        return _guarded_client(policy, resolver, {**spec.headers, **(headers or {})},
                               timeout=timeout, auth=auth or spec.auth)

    async with sse_client(spec.url, timeout=HTTP_TIMEOUT_S, sse_read_timeout=HTTP_READ_TIMEOUT_S,
                          httpx_client_factory=factory) as streams:
        yield streams


def _guarded_client(policy: NetworkPolicy, resolver: Resolver | None, headers: Any, *,
                    timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
                    ) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=GuardedTransport(policy, resolver=resolver), trust_env=False,
        follow_redirects=False, headers=dict(headers), auth=auth,
        timeout=timeout or httpx2.Timeout(HTTP_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S))
