"""McpManager: a run's MCP servers, connected together, their tools in the run's registry.

One manager per run (DESIGN 2.7)::

    async with McpManager(specs, registry=registry, allow_private_network=False,
                          on_warning=publish) as mcp:
        runner = AgentRunner(provider, registry, ...)

- Entering starts every server at once (each bounded by its ``connect_timeout_s``); a server that
  fails to start, initialize or list its tools is skipped with a :class:`WarningEvent` (given to
  ``on_warning`` and kept in ``warnings``) and the run goes on with the others.
- Each allowed tool is registered as ``mcp__<server>__<tool>`` (:mod:`.adapter`), in the order of
  ``specs`` and then of each server's listing, so names are the same from run to run.
- A server that offers resources also gets ``mcp__<server>__list_resources`` and
  ``mcp__<server>__read_resource`` (:mod:`.resources`).
- ``tools/list_changed`` updates the registry in place: removed tools are unregistered, new and
  changed ones (re)registered under their run-stable names.
- Leaving closes every connection (stdio processes end and are reaped, with their pipes and
  temporary directories; HTTP sessions are terminated) and unregisters the tools. Leaving waits
  for that even when the leaving task is cancelled, then re-raises the cancellation.
- With a ``pool`` (:mod:`.pool`) and a ``keys`` entry per spec, the connections are the pool's
  instead: entering takes them (warm ones at once), leaving gives them back open.

The servers live in a supervisor task of their own holding an anyio task group, so the host's
task (a Channels consumer or the run worker) is never inside an anyio cancel scope of ours.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, Self

import anyio
import mcp_types as types
from jsonschema import SchemaError

from apps.engine.errors import ToolError
from apps.engine.events import McpListChanged, WarningEvent
from apps.engine.mcp.adapter import McpTool, ToolNamer, tool_spec
from apps.engine.mcp.config import McpServerSpec
from apps.engine.mcp.connection import ConnectionState, ServerConnection, sandbox_status
from apps.engine.mcp.elicitation import ElicitationPort, ElicitationRelay, EventSink
from apps.engine.mcp.pool import McpPool, ServerKey
from apps.engine.mcp.prompts import PromptInfo
from apps.engine.mcp.resources import ListResourcesTool, ReadResourceTool
from apps.engine.mcp.routing import CallerView
from apps.engine.tools.base import BaseTool, Concurrency
from apps.engine.tools.net import NetworkPolicy, Resolver
from apps.engine.tools.registry import ToolRegistry
from apps.engine.tools.sandbox import SandboxStatus

__all__ = ["McpManager", "McpToolInfo", "ServerStatus", "WarningSink", "probe_server"]

logger = logging.getLogger(__name__)

WarningSink = Callable[[WarningEvent], Awaitable[None] | None]
"""Where warnings go as they happen (sync or async); e.g. the run's event publisher."""


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    """A tool a server listed: its MCP ``name``, the run's ``tool_name`` for it (None when the
    allow-list leaves it out or it could not be registered), ``description``, ``read_only``
    (runs beside other safe calls), ``requires_approval``."""

    name: str
    tool_name: str | None
    description: str
    read_only: bool
    requires_approval: bool


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as a person sees it: ``state`` ("connected", "failed", "lost", "closed",
    "connecting"), ``detail`` (a sentence: why it failed), ``protocol_version``, ``sandbox``
    (stdio: how it runs) and its ``tools``."""

    name: str
    transport: str
    state: ConnectionState
    detail: str
    protocol_version: str | None
    sandbox: str | None
    tools: tuple[McpToolInfo, ...]


class McpManager:
    """The MCP servers of one run (see the module doc).

    ``registry``: the run's registry to add the tools to (a new one when None);
    ``allow_private_network`` / ``allowed_networks``: the SSRF policy for HTTP servers (the host
    settings WebFetch obeys; see :mod:`apps.engine.tools.net`); ``sandbox``: the host setting
    for stdio servers ("auto": bubblewrap when it works; "off"); ``resolver``: DNS for the guard
    (tests); ``client_name``/``client_version``: how confab introduces itself to servers;
    ``pool`` and ``keys`` (one per spec): take the connections from a worker's pool (its own
    network, sandbox and client settings apply then); ``whole_team``: ``specs`` are all the
    team's servers (a run's; False: some of them, for one request), see
    :meth:`.McpPool.acquire`;
    ``elicitation``: who answers a server's ``elicitation/create`` (None: the client does not
    declare the capability, so servers do not ask), its ``awaiting_elicitation`` and
    ``elicitation_answered`` events going to ``on_event`` (:mod:`.elicitation`), as do
    ``mcp_list_changed`` events when a server's prompts or resources change; with a pool, the
    pool routes each question to the run whose request caused it (:mod:`.routing`). Raises
    ValueError when ``keys`` does not match ``specs``.
    """

    def __init__(self, specs: Sequence[McpServerSpec], *, registry: ToolRegistry | None = None,
                 allow_private_network: bool = False, allowed_networks: Iterable[str] = (),
                 sandbox: str = "auto", on_warning: WarningSink | None = None,
                 resolver: Resolver | None = None, client_name: str = "confab",
                 client_version: str = "0.1.0", pool: McpPool | None = None,
                 keys: Sequence[ServerKey] = (), whole_team: bool = True,
                 elicitation: ElicitationPort | None = None,
                 on_event: EventSink | None = None) -> None:
        if pool is not None and len(keys) != len(specs):
            raise ValueError("a pooled McpManager needs one key per spec")
        self.registry = registry if registry is not None else ToolRegistry()
        self.warnings: list[WarningEvent] = []
        self._on_warning = on_warning
        self._sandbox_setting = sandbox
        self._namer = ToolNamer()
        self._tools: dict[int, dict[str, McpTool]] = {}
        self._resource_tools: list[BaseTool] = []
        self._registered = anyio.Event()
        self._ready = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None
        self._pool = pool
        self._pooled = list(zip(keys, specs, strict=True)) if pool is not None else []
        self._whole_team = whole_team
        self._entered = False
        policy = NetworkPolicy.build(allow_private_network=allow_private_network,
                                     allowed_networks=allowed_networks)
        info = types.Implementation(name=client_name, version=client_version)
        relay = ElicitationRelay(elicitation, on_event) if elicitation is not None else None
        self._relay = relay
        self._on_event = on_event
        self._connections = [] if pool is not None else [
            ServerConnection(spec, client_info=info, policy=policy, resolver=resolver,
                             warn=self._warn, on_tools_changed=self._tools_changed,
                             elicitation=relay.callback(spec.name) if relay else None,
                             on_list_changed=self._list_changed if on_event else None)
            for spec in specs]
        self._positions = {c: position for position, c in enumerate(self._connections)}

    # -- lifetime -----------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        if self._entered:
            raise RuntimeError("an McpManager is entered once")
        self._entered = True
        try:
            await self._connect()
            for connection in self._connections:
                if connection.state == "connected":
                    await self._register(connection)
                    self._register_resources(connection)
                else:
                    await self._warn(f"MCP server '{connection.name}' is unavailable for this "
                                     f"run: {connection.detail}.")
        except BaseException:
            await self._close()
            raise
        self._registered.set()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self._close()

    async def _connect(self) -> None:
        """Take the pool's connections, or start this run's own in a supervisor task."""
        if self._pool is not None:
            self._connections = await self._pool.acquire(self._pooled, self,
                                                         whole_team=self._whole_team)
            self._positions = {c: position for position, c in enumerate(self._connections)}
            return
        sandbox = await sandbox_status((c.spec for c in self._connections),
                                       self._sandbox_setting)
        self._supervisor = asyncio.create_task(self._supervise(sandbox), name="mcp-servers")
        await self._ready.wait()

    async def _supervise(self, sandbox: SandboxStatus) -> None:
        try:
            async with anyio.create_task_group() as servers:
                for connection in self._connections:
                    servers.start_soon(connection.run, sandbox, self._registered)
                for connection in self._connections:
                    await connection.ready.wait()
                self._ready.set()
        finally:
            self._ready.set()

    async def _close(self) -> None:
        """Stop every connection and wait until they are closed, even if cancelled meanwhile
        (pooled ones go back to the pool open)."""
        if self._pool is not None:
            await self._pool.release(self._connections, self)
            self._unregister_all()
            return
        for connection in self._connections:
            connection.stop()
        cancelled = False
        supervisor = self._supervisor
        while supervisor is not None and not supervisor.done():
            try:
                await asyncio.shield(supervisor)
            except asyncio.CancelledError:
                cancelled = True  # ours: finish closing first, then re-raise it
            except Exception:
                logger.exception("the MCP supervisor failed")
        self._unregister_all()
        if cancelled:
            raise asyncio.CancelledError

    # -- the registry -------------------------------------------------------------------------
    async def _register(self, connection: ServerConnection) -> None:
        """Make the registry hold exactly ``connection``'s current allowed tools."""
        spec = connection.spec
        position = self._positions[connection]
        old = self._tools.get(position, {})
        new: dict[str, McpTool] = {}
        problems: list[str] = []
        for listed in connection.listing:
            if not spec.allows(listed.name) or listed.name in new:
                continue
            name = self._namer.name(position, spec.name, listed.name)
            new[listed.name] = McpTool(
                tool_spec(name, spec.name, listed, call_timeout_s=spec.call_timeout_s),
                self._caller_side(connection), listed.name)
        for mcp_name, tool in old.items():
            if mcp_name not in new or new[mcp_name].spec != tool.spec:
                self._unregister(tool)
        for mcp_name, tool in list(new.items()):
            previous = old.get(mcp_name)
            if previous is not None and previous.spec == tool.spec:
                new[mcp_name] = previous
                continue
            try:
                self.registry.register(tool)
            except (ValueError, SchemaError) as exc:
                del new[mcp_name]
                problems.append(f"{mcp_name} ({str(exc).splitlines()[0]})")
        self._tools[position] = new
        if problems:
            await self._warn(f"MCP server '{spec.name}': tools left out: {'; '.join(problems)}.")

    def _register_resources(self, connection: ServerConnection) -> None:
        """The resource tools of a server that offers resources (they never change)."""
        if not connection.offers_resources:
            return
        key, server = self._positions[connection], connection.name
        timeout = connection.spec.call_timeout_s
        read_name = self._namer.name(key, server, "read_resource", kind="resources")
        list_name = self._namer.name(key, server, "list_resources", kind="resources")
        source = self._caller_side(connection)
        tools: list[BaseTool] = [ListResourcesTool(list_name, read_name, source, timeout),
                                 ReadResourceTool(read_name, source, timeout)]
        for tool in tools:
            self.registry.register(tool)
        self._resource_tools.extend(tools)

    async def _list_changed(self, connection: ServerConnection,
                            kind: Literal["prompts", "resources"]) -> None:
        """Tell ``on_event`` (the room: the composer asks for prompts again)."""
        if self._on_event is None:
            return
        outcome = self._on_event(McpListChanged(server=connection.name, list=kind))
        if inspect.isawaitable(outcome):
            await outcome

    async def _tools_changed(self, connection: ServerConnection) -> None:
        await self._register(connection)

    async def tools_changed(self, connection: ServerConnection) -> None:
        """A pooled connection of this run listed new tools: update the registry."""
        if connection in self._positions and self._registered.is_set():
            await self._register(connection)

    async def warn(self, message: str) -> None:
        """A pooled connection of this run has a problem to tell its room."""
        await self._warn(message)

    async def list_changed(self, connection: ServerConnection,
                           kind: Literal["prompts", "resources"]) -> None:
        """A pooled connection of this run says its prompts or resources changed."""
        if connection in self._positions:
            await self._list_changed(connection, kind)

    async def elicit(self, server: str, params: types.ElicitRequestParams
                     ) -> types.ElicitResult | types.ErrorData:
        """A pooled server asks this run (the pool routed it here): the run's answerer
        answers through the relay; a run without one declines."""
        if self._relay is None:
            return types.ElicitResult(action="decline")
        return await self._relay.relay(server, params)

    def _caller_side(self, connection: ServerConnection) -> ServerConnection | CallerView:
        """What this run's tools call: a pooled connection marks their requests as this run's
        (so the pool can route the server's questions); an own one is used as it is."""
        return CallerView(connection, self) if self._pool is not None else connection

    def _unregister(self, tool: BaseTool) -> None:
        if self.registry.get(tool.spec.name) is tool:
            self.registry.unregister(tool.spec.name)

    def _unregister_all(self) -> None:
        for tools in self._tools.values():
            for tool in tools.values():
                self._unregister(tool)
        self._tools.clear()
        for tool in self._resource_tools:
            self._unregister(tool)
        self._resource_tools.clear()

    # -- reporting ----------------------------------------------------------------------------
    async def _warn(self, message: str) -> None:
        event = WarningEvent(message=message)
        self.warnings.append(event)
        logger.warning("%s", message)
        if self._on_warning is None:
            return
        try:
            outcome = self._on_warning(event)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:  # a failing sink must not take a server or the run down
            logger.exception("the MCP warning sink failed")

    async def read_resource(self, server: str, uri: str) -> types.ReadResourceResult:
        """Read ``uri`` from the connected server named ``server`` (a person's attachment).
        Raises ToolError: no such server in this manager, not connected, no resources, or
        the server's own error."""
        connection = next((c for c in self._connections if c.name == server), None)
        if connection is None:
            raise ToolError(f"There is no MCP server '{server}' here.")
        if connection.state == "connected" and not connection.offers_resources:
            raise ToolError(f"The MCP server '{server}' offers no resources.")
        return await self._caller_side(connection).read_resource(uri)

    async def prompts(self) -> list[PromptInfo]:
        """The prompts of every connected server that offers them, in the order of ``specs``;
        a server whose listing fails is left out with a warning."""
        found: list[PromptInfo] = []
        for connection in self._connections:
            if connection.state != "connected" or not connection.offers_prompts:
                continue
            try:
                listed = await self._caller_side(connection).list_prompts()
            except ToolError as exc:
                await self._warn(str(exc))
                continue
            found.extend(PromptInfo.of(connection.name, p) for p in listed)
        return found

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]
                         ) -> types.GetPromptResult:
        """The prompt ``name`` of ``server`` expanded with ``arguments``. Raises ToolError:
        no such server here, or the server's own error."""
        connection = next((c for c in self._connections if c.name == server), None)
        if connection is None:
            raise ToolError(f"There is no MCP server '{server}' here.")
        return await self._caller_side(connection).get_prompt(name, arguments)

    def tools(self) -> list[McpTool]:
        """The MCP tools registered now, in registration order."""
        return [tool for tools in self._tools.values() for tool in tools.values()]

    def status(self) -> list[ServerStatus]:
        """Every server's state, in the order of ``specs``."""
        return [self._status(connection) for connection in self._connections]

    def _status(self, connection: ServerConnection) -> ServerStatus:
        registered = self._tools.get(self._positions[connection], {})
        infos = []
        for listed in connection.listing:
            spec = tool_spec("-", connection.name, listed, call_timeout_s=1.0)
            tool = registered.get(listed.name)
            infos.append(McpToolInfo(
                name=listed.name, tool_name=tool.spec.name if tool else None,
                description=spec.description, read_only=spec.concurrency is Concurrency.ALWAYS,
                requires_approval=spec.requires_approval))
        return ServerStatus(
            name=connection.name, transport=connection.spec.transport, state=connection.state,
            detail=connection.detail, protocol_version=connection.protocol_version,
            sandbox=connection.sandbox_note, tools=tuple(infos))


async def probe_server(spec: McpServerSpec, *, allow_private_network: bool = False,
                       allowed_networks: Iterable[str] = (), sandbox: str = "auto",
                       resolver: Resolver | None = None) -> ServerStatus:
    """Connect to ``spec``'s server, list its tools and disconnect: the admin's "test
    connection". A failure is in the returned status (``state == "failed"``), not raised."""
    async with McpManager([spec], allow_private_network=allow_private_network,
                          allowed_networks=allowed_networks, sandbox=sandbox,
                          resolver=resolver) as manager:
        return manager.status()[0]
