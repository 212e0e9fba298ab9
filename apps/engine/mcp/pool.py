"""A worker's warm MCP servers, reused by the runs of one team (DESIGN 2.7).

Starting a stdio server (a process, ``initialize``, ``tools/list``) costs far more than a run's
first model byte, so a worker keeps each connection open between runs::

    pool = McpPool(idle_timeout_s=300, max_processes=16)
    async with McpManager(specs, keys=keys, pool=pool, registry=tools) as mcp:
        ...                                   # the run uses the pool's connections
    await pool.aclose()                       # at worker shutdown

- **Key.** A connection belongs to one :class:`ServerKey` (team, server configuration, and the
  person for a server that signs in per person; None for a team-wide one). Keys never match
  across teams, so two teams enabling the same catalog server get two processes.
- **Acquire.** Missing servers start concurrently; servers another run is starting are waited
  for, not started twice. A warm server idle for ``check_idle_s`` or longer is health-checked
  first (:meth:`ServerConnection.check`); one that fails it, has lost its connection, or whose
  spec differs from the run's (the team's configuration changed: the spec is the fingerprint,
  secrets included) is closed and started again. A server another run is using, or one released
  less than ``check_idle_s`` ago, is used without a check: it answered moments ago, and the
  check's round trip (about 5 ms a server, more on a busy machine) would delay the run's first
  model request. One that died in that window fails the run's calls to it (a ToolError each) and
  is replaced at the next acquire. A team's idle servers no run of it asks for any more are
  closed.
- **Refresh.** ``tools/list_changed`` reaches every run using the connection (each updates its
  own registry); a run that starts later registers the refreshed listing. Prompt and resource
  list changes reach every run using it too.
- **Questions.** A server's ``elicitation/create`` goes to the one run whose request caused it
  (:mod:`.routing`), never to another key's (another team's) run; when no run can be named it
  is declined. Pooled connections always offer elicitation; a run without an answerer declines.
- **Release.** A server no run uses is idle; after ``idle_timeout_s`` on ``clock`` it is closed.
  At most ``max_processes`` stdio servers are pooled: the least recently used idle one is closed
  to make room, and when every pooled one is in use the run gets a server of its own, closed when
  the run lets go of it.
- **Close.** Every close (idle, configuration change, failed health check, eviction, shutdown)
  stops the connection's owner task, which closes the SDK client; a stdio server runs under the
  subreaper (:mod:`apps.engine.tools.subreaper`), so its descendants end with it. Closes run in
  the background; :meth:`drain` waits for them, :meth:`aclose` closes everything.

Stopping a run cancels its tool calls (the SDK sends ``notifications/cancelled``), not the pool.
One pool per event loop (the connections' streams belong to it); not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import anyio
import mcp_types as types

from apps.engine.clock import MONOTONIC, Clock
from apps.engine.mcp.config import McpServerSpec
from apps.engine.mcp.connection import ServerConnection, sandbox_status
from apps.engine.mcp.routing import context_without_caller
from apps.engine.tools.net import NetworkPolicy, Resolver
from apps.engine.tools.sandbox import SandboxStatus

__all__ = ["McpPool", "PoolListener", "ServerKey"]

logger = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class ServerKey:
    """Which pooled connection: ``team`` (the tenant's id), ``server`` (the configuration's id)
    and ``principal`` (the person a person-scoped server signed in as; None: team-wide)."""

    team: Hashable
    server: Hashable
    principal: Hashable | None = None


class PoolListener(Protocol):
    """A run using pooled connections: told of refreshed listings, changed prompt or resource
    lists and warnings, and asked the questions its requests caused."""

    async def tools_changed(self, connection: ServerConnection) -> None: ...

    async def list_changed(self, connection: ServerConnection,
                           kind: Literal["prompts", "resources"]) -> None: ...

    async def warn(self, message: str) -> None: ...

    async def elicit(self, server: str, params: types.ElicitRequestParams
                     ) -> types.ElicitResult | types.ErrorData: ...


class _Entry:
    """One pooled connection, its owner task and the runs using it."""

    def __init__(self, key: ServerKey, spec: McpServerSpec, *, pooled: bool) -> None:
        self.key = key
        self.spec = spec
        self.pooled = pooled  # False: the run's own (the pool was full), closed on release
        self.listeners: set[PoolListener] = set()
        self.last_used = 0.0
        self.connection: ServerConnection
        self.task: asyncio.Task[None] | None = None
        self.expiry: asyncio.Task[None] | None = None

    async def warn(self, message: str) -> None:
        if not self.listeners:
            logger.warning("%s", message)
        for listener in list(self.listeners):
            await listener.warn(message)

    async def tools_changed(self, connection: ServerConnection) -> None:
        for listener in list(self.listeners):
            await listener.tools_changed(connection)

    async def list_changed(self, connection: ServerConnection,
                           kind: Literal["prompts", "resources"]) -> None:
        for listener in list(self.listeners):
            await listener.list_changed(connection, kind)

    async def elicit(self, context: Any, params: types.ElicitRequestParams
                     ) -> types.ElicitResult | types.ErrorData:
        """The SDK's ``elicitation_callback``: ask the run whose request caused it."""
        caller = self.connection.calls.caller()
        if caller in self.listeners:  # only a run using this very connection
            return await caller.elicit(self.spec.name, params)  # type: ignore[attr-defined]
        logger.info("MCP server %r asked a question no run can answer: declined",
                    self.spec.name)
        return types.ElicitResult(action="decline")


class McpPool:
    """Warm MCP connections of one worker (see the module doc).

    ``idle_timeout_s``: seconds an unused server stays open; ``max_processes``: stdio servers
    kept at most; ``allow_private_network``, ``allowed_networks``, ``sandbox``, ``resolver``,
    ``client_name``, ``client_version``: as for :class:`~apps.engine.mcp.manager.McpManager`;
    ``clock``: times the idle timeout and the idle time before a check; ``check_timeout_s``:
    seconds a warm server has to list its tools before a run uses it (else it is replaced);
    ``check_idle_s``: seconds a server must have been idle to be checked at all. Raises
    ValueError for a timeout or limit below 1.
    """

    def __init__(self, *, idle_timeout_s: float = 300.0, max_processes: int = 16,
                 allow_private_network: bool = False, allowed_networks: Iterable[str] = (),
                 sandbox: str = "auto", resolver: Resolver | None = None,
                 clock: Clock | None = None, client_name: str = "confab",
                 client_version: str = "0.1.0", check_timeout_s: float = 5.0,
                 check_idle_s: float = 10.0) -> None:
        if idle_timeout_s <= 0 or max_processes < 1:
            raise ValueError("the MCP pool needs a positive idle timeout and process limit")
        self.idle_timeout_s = idle_timeout_s
        self.max_processes = max_processes
        self.check_timeout_s = check_timeout_s
        self.check_idle_s = check_idle_s
        self._sandbox = sandbox
        self._resolver = resolver
        self._clock = clock or MONOTONIC
        self._policy = NetworkPolicy.build(allow_private_network=allow_private_network,
                                           allowed_networks=allowed_networks)
        self._info = types.Implementation(name=client_name, version=client_version)
        self._entries: dict[ServerKey, _Entry] = {}
        self._owners: dict[ServerConnection, _Entry] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def keys(self) -> frozenset[ServerKey]:
        """The keys of the servers the pool holds now."""
        return frozenset(self._entries)

    # -- runs ---------------------------------------------------------------------------------
    async def acquire(self, servers: Sequence[tuple[ServerKey, McpServerSpec]],
                      listener: PoolListener, *, whole_team: bool = True
                      ) -> list[ServerConnection]:
        """The connections of ``servers`` for ``listener``'s run, in order, once each is
        connected or failed (a failed one is not kept). Release them with :meth:`release`.
        ``whole_team``: ``servers`` are all the team's (a run's), so the team's idle servers
        not among them are closed; False for a request that names some of them."""
        if self._closed:
            raise RuntimeError("the MCP pool is closed")
        if whole_team:
            self._close_unlisted(servers)
        await self._replace_unhealthy(servers)
        sandbox: SandboxStatus | None = None
        entries: list[_Entry] = []
        try:
            for key, spec in servers:
                if sandbox is None and key not in self._entries:
                    sandbox = await sandbox_status((s for _, s in servers), self._sandbox)
                entry = self._entries.get(key) or self._start(key, spec, sandbox)
                self._use(entry, listener)
                entries.append(entry)
            for entry in entries:
                await entry.connection.ready.wait()
        except BaseException:
            await self.release([entry.connection for entry in entries], listener)
            raise
        for entry in entries:
            if entry.connection.state != "connected":
                self._forget(entry)
        return [entry.connection for entry in entries]

    async def release(self, connections: Iterable[ServerConnection],
                      listener: PoolListener) -> None:
        """``listener``'s run no longer uses ``connections``: idle ones start their timeout."""
        for connection in connections:
            entry = self._owners.get(connection)
            if entry is None:
                continue
            entry.listeners.discard(listener)
            if entry.listeners:
                continue
            entry.last_used = self._clock.now()
            if not entry.pooled or self._entries.get(entry.key) is not entry:
                self._close_soon(entry)
            else:
                entry.expiry = asyncio.create_task(self._expire(entry),
                                                   name=f"mcp-idle:{entry.spec.name}")

    def _use(self, entry: _Entry, listener: PoolListener) -> None:
        entry.listeners.add(listener)
        if entry.expiry is not None:
            entry.expiry.cancel()
            entry.expiry = None

    # -- starting -----------------------------------------------------------------------------
    def _start(self, key: ServerKey, spec: McpServerSpec, sandbox: SandboxStatus) -> _Entry:
        pooled = spec.transport != "stdio" or self._make_room()
        entry = _Entry(key, spec, pooled=pooled)
        entry.connection = ServerConnection(
            spec, client_info=self._info, policy=self._policy, resolver=self._resolver,
            warn=entry.warn, on_tools_changed=entry.tools_changed, elicitation=entry.elicit,
            on_list_changed=entry.list_changed)
        registered = anyio.Event()
        registered.set()  # each run registers the listing it finds; later ones fan out
        entry.task = asyncio.create_task(entry.connection.run(sandbox, registered),
                                         name=f"mcp-server:{spec.name}",
                                         context=context_without_caller())
        entry.task.add_done_callback(lambda _: self._forget(entry))  # it ended by itself
        self._owners[entry.connection] = entry
        if pooled:
            self._entries[key] = entry
        return entry

    def _make_room(self) -> bool:
        """Whether a new stdio server fits, after closing least recently used idle ones."""
        stdio = [e for e in self._entries.values() if e.spec.transport == "stdio"]
        idle = sorted((e for e in stdio if not e.listeners), key=lambda e: e.last_used)
        while len(stdio) >= self.max_processes and idle:
            evicted = idle.pop(0)
            stdio.remove(evicted)
            logger.info("MCP pool full: closing idle server %r", evicted.spec.name)
            self._close_soon(evicted)
        return len(stdio) < self.max_processes

    # -- health and configuration ---------------------------------------------------------------
    async def _replace_unhealthy(self, servers: Sequence[tuple[ServerKey, McpServerSpec]]
                                 ) -> None:
        """Close the warm servers of ``servers`` that changed, were lost or fail a check (only
        those idle for ``check_idle_s``: see the module doc)."""
        checks = []
        checked_before = self._clock.now() - self.check_idle_s
        for key, spec in servers:
            entry = self._entries.get(key)
            if entry is None:
                continue
            state = entry.connection.state
            if entry.spec != spec or state not in ("connecting", "connected"):
                self._close_soon(entry)
            elif state == "connected" and not entry.listeners \
                    and entry.last_used <= checked_before:
                checks.append(entry)
        results = await asyncio.gather(*(e.connection.check(self.check_timeout_s) for e in checks))
        for entry, healthy in zip(checks, results, strict=True):
            if not healthy and self._entries.get(entry.key) is entry:
                self._close_soon(entry)

    def _close_unlisted(self, servers: Sequence[tuple[ServerKey, McpServerSpec]]) -> None:
        """Close the idle servers of the teams in ``servers`` that are no longer configured."""
        teams = {key.team for key, _ in servers}
        wanted = {(key.team, key.server) for key, _ in servers}
        for entry in list(self._entries.values()):
            key = entry.key
            if key.team in teams and (key.team, key.server) not in wanted \
                    and not entry.listeners:
                self._close_soon(entry)

    # -- closing ------------------------------------------------------------------------------
    async def _expire(self, entry: _Entry) -> None:
        await self._clock.sleep(self.idle_timeout_s)
        entry.expiry = None
        if not entry.listeners:
            self._close_soon(entry)

    def _forget(self, entry: _Entry) -> None:
        if self._entries.get(entry.key) is entry:
            del self._entries[entry.key]

    def _close_soon(self, entry: _Entry) -> None:
        """Take ``entry`` out of the pool; close it once no run uses it any more."""
        self._forget(entry)
        if entry.listeners:
            return  # its last release closes it
        if entry.expiry is not None:
            entry.expiry.cancel()
            entry.expiry = None
        self._owners.pop(entry.connection, None)
        task = asyncio.create_task(self._close(entry), name=f"mcp-close:{entry.spec.name}")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close(self, entry: _Entry) -> None:
        entry.connection.stop()
        if entry.task is not None:
            try:
                await entry.task  # run() never raises; the SDK's stdio shutdown is shielded
            except Exception:
                logger.exception("MCP server %r: closing failed", entry.spec.name)

    async def drain(self) -> None:
        """Wait until every close in progress is done."""
        while self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    async def aclose(self) -> None:
        """Close every server, used or not, and wait for it (worker shutdown)."""
        self._closed = True
        for entry in list(self._owners.values()):
            entry.listeners.clear()
            self._close_soon(entry)
        await self.drain()

    def size(self) -> int:
        """How many connections the pool keeps now (in use or idle)."""
        return len(self._entries)
