"""One MCP server's connection (a run's or a pool's): started, served and closed by its owner task.

The SDK's transports and sessions are anyio task groups and cancel scopes, which must be entered
and left by the same task; so each server gets an owner task (:meth:`ServerConnection.run`) that
opens the SDK ``Client``, lists the tools, serves until :meth:`stop`, and closes it. Tool calls
come from the executor's tasks and only send requests on the open session.

Deadlines (anyio cancel scopes, not native task cancellation, so the SDK's shielded stdio
shutdown always runs: stdin closed, 2 s, SIGTERM to the process group, 2 s, SIGKILL):
``connect_timeout_s`` covers starting, initializing and the first ``tools/list``, and each later
``tools/list``; ``call_timeout_s`` each ``tools/call`` (on timeout the SDK sends
``notifications/cancelled``); closing has :data:`CLOSE_TIMEOUT_S`.

``notifications/tools/list_changed`` (sent unasked by servers of protocol 2025-11-25 and
earlier; on 2026-07-28 only on a ``subscriptions/listen`` stream, which is opened when the server
declares ``tools.listChanged``) marks the listing stale; a refresh task lists the tools again and
the manager updates the run's registry. A tool call that saw such a notification before its
result waits for that refresh before it returns, so the next model call offers the new tools.
"""

from __future__ import annotations

import logging
import math
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any, Literal, TextIO, TypeVar

import anyio
import anyio.lowlevel
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError, Subscription, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from apps.engine.errors import ToolError
from apps.engine.mcp.config import McpServerSpec
from apps.engine.mcp.routing import CallRouter
from apps.engine.mcp.transport import StdioLaunch, open_transport, stdio_launch
from apps.engine.tools.net import NetworkPolicy, Resolver, UrlRefused
from apps.engine.tools.sandbox import SandboxStatus, aresolve_status

__all__ = ["CLOSE_TIMEOUT_S", "ConnectionState", "ServerConnection", "sandbox_status"]

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 10.0
MAX_LIST_PAGES = 100
_STDERR_TAIL_CHARS = 600
_SECRET_MIN_CHARS = 6  # shorter values ("1", "true") would blank out ordinary words

_T = TypeVar("_T")
ConnectionState = Literal["connecting", "connected", "failed", "lost", "closed"]
Warn = Callable[[str], Awaitable[None]]
ToolsChanged = Callable[["ServerConnection"], Awaitable[None]]
_LIST_CHANGES: dict[type, Literal["prompts", "resources"]] = {
    types.PromptListChangedNotification: "prompts",
    types.ResourceListChangedNotification: "resources"}
ListChanged = Callable[["ServerConnection", Literal["prompts", "resources"]], Awaitable[None]]


class ServerConnection:
    """The connection to ``spec``'s server, for one run or for a worker's pool.

    ``state`` and ``detail`` (a sentence for people), ``listing`` (every tool the server listed
    last), ``protocol_version`` and ``sandbox_note`` once known. ``on_tools_changed`` is awaited
    after each refreshed listing, ``warn`` with each problem found while serving;
    ``elicitation``: the SDK's ``elicitation_callback`` (None: not offered to the server);
    ``on_list_changed(connection, "prompts" | "resources")`` is awaited when the server says
    that list changed (None: not listened for); ``calls``: the runs with requests in flight,
    for a pooled connection's server-initiated requests (:mod:`.routing`).
    """

    def __init__(self, spec: McpServerSpec, *, client_info: types.Implementation,
                 policy: NetworkPolicy, resolver: Resolver | None, warn: Warn,
                 on_tools_changed: ToolsChanged, elicitation: Any = None,
                 on_list_changed: ListChanged | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.state: ConnectionState = "connecting"
        self.detail = "connecting"
        self.listing: list[types.Tool] = []
        self.protocol_version: str | None = None
        self.sandbox_note: str | None = None
        self.ready = anyio.Event()
        self._client_info = client_info
        self._policy = policy
        self._resolver = resolver
        self._warn_sink = warn
        self._secrets = _secret_values(spec)
        self._on_tools_changed = on_tools_changed
        self._elicitation = elicitation
        self._on_list_changed = on_list_changed
        self.calls = CallRouter()
        self._client: Client | None = None
        self._scope: anyio.CancelScope | None = None
        self._stop = anyio.Event()
        self._dirty = anyio.Event()
        self._settled = anyio.Event()
        self._settled.set()

    # -- the owner task ---------------------------------------------------------------------
    async def run(self, sandbox: SandboxStatus, registered: anyio.Event) -> None:
        """Connect, serve until :meth:`stop`, close. Never raises (an exception here would
        cancel every other server); ``ready`` is set once connected or failed."""
        try:
            with ExitStack() as files:
                await self._run(sandbox, registered, files)
        except Exception as exc:  # a bug or an SDK surprise: this server only
            logger.exception("MCP server %r: the connection task failed", self.name)
            if self.state == "connecting":
                self._fail(_describe(exc))
        finally:
            self._client = None
            if self.state in ("connecting", "connected"):
                self.state, self.detail = "closed", "closed"
            self.ready.set()
            self._settled.set()

    async def _run(self, sandbox: SandboxStatus, registered: anyio.Event,
                   files: ExitStack) -> None:
        launch, errlog = self._prepare(sandbox, files)
        with anyio.CancelScope() as scope:
            self._scope = scope
            scope.deadline = anyio.current_time() + self.spec.connect_timeout_s
            if self._stop.is_set():  # stopped before this task got here
                scope.cancel()
            try:
                transport = open_transport(self.spec, launch=launch, errlog=errlog,
                                           policy=self._policy, resolver=self._resolver)
                async with Client(transport, mode="auto", client_info=self._client_info,
                                  message_handler=self._on_message, cache=None,
                                  elicitation_callback=self._elicitation) as client, \
                        AsyncExitStack() as stack:
                    changes = await self._subscribe(client, stack)  # before listing: no gap
                    listing = await self._list_tools(client)
                    scope.deadline = math.inf
                    self._connected(client, listing)
                    await self._serve(client, changes, registered)
                    scope.deadline = anyio.current_time() + CLOSE_TIMEOUT_S
            except Exception as exc:
                if self.state == "connecting":
                    self._fail(_describe(exc) + _stderr_tail(errlog))
                elif not self._stop.is_set():
                    await self._lost(_describe(exc))
                else:
                    logger.info("MCP server %r closed with %r", self.name, exc)
        if scope.cancelled_caught and self.state == "connecting":
            why = ("the run ended before it started" if self._stop.is_set()
                   else f"it did not start within {self.spec.connect_timeout_s:g} s")
            self._fail(why + _stderr_tail(errlog))

    def _prepare(self, sandbox: SandboxStatus, files: ExitStack
                 ) -> tuple[StdioLaunch | None, TextIO | None]:
        """A stdio server's launch, its private home directory and its stderr file."""
        if self.spec.transport != "stdio":
            return None, None
        home = Path(files.enter_context(tempfile.TemporaryDirectory(
            prefix="confab-mcp-", ignore_cleanup_errors=True)))
        errlog = files.enter_context(tempfile.TemporaryFile(  # noqa: SIM115 (the stack closes it)
            "w+", encoding="utf-8", errors="replace"))
        launch = stdio_launch(self.spec, home.resolve(), sandbox)
        self.sandbox_note = launch.note
        return launch, errlog

    def _connected(self, client: Client, listing: list[types.Tool]) -> None:
        self._client = client
        self.listing = listing
        self.protocol_version = client.protocol_version
        self.state, self.detail = "connected", f"connected (protocol {client.protocol_version})"
        self.ready.set()

    def _fail(self, detail: str) -> None:
        self.state, self.detail = "failed", self.redact(detail)
        self.ready.set()

    def redact(self, text: str) -> str:
        """``text`` without the values of the spec's ``env`` and ``headers``: what a server
        prints or answers may quote them, and warnings and tool errors reach the room."""
        for secret in self._secrets:
            text = text.replace(secret, "[secret]")
        return text

    async def _warn(self, message: str) -> None:
        await self._warn_sink(self.redact(message))

    async def _serve(self, client: Client, changes: Subscription | None,
                     registered: anyio.Event) -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._refresh_loop, client, registered)
            if changes is not None:
                tasks.start_soon(self._follow, changes)
            await self._stop.wait()
            tasks.cancel_scope.cancel()

    def stop(self) -> None:
        """Ask the owner task to close the connection (from any task); a connection still
        starting is abandoned at once."""
        self._stop.set()
        if self.state == "connecting" and self._scope is not None:
            self._scope.cancel()

    # -- tools/list and list_changed --------------------------------------------------------
    async def _list_tools(self, client: Client) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
        raise MCPError(types.INTERNAL_ERROR, f"tools/list gave more than {MAX_LIST_PAGES} pages")

    async def _subscribe(self, client: Client, stack: AsyncExitStack) -> Subscription | None:
        """On 2026-07-28 a server sends list changes only on a ``subscriptions/listen``
        stream, for the lists whose capability declares ``listChanged`` (tools; prompts and
        resources when someone listens for them): open it (acknowledged) or give None."""
        caps = client.server_capabilities
        wanted = {kind: bool(cap is not None and cap.list_changed) for kind, cap in (
            ("tools", caps.tools), ("prompts", caps.prompts), ("resources", caps.resources))}
        if self._on_list_changed is None:
            wanted["prompts"] = wanted["resources"] = False
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not any(wanted.values()):
            return None
        try:
            return await stack.enter_async_context(client.listen(
                tools_list_changed=wanted["tools"], prompts_list_changed=wanted["prompts"],
                resources_list_changed=wanted["resources"]))
        except (ListenNotSupportedError, SubscriptionLost, MCPError) as exc:
            logger.info("MCP server %r: no tool list changes (%s)", self.name, exc)
            return None

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._mark_stale()
        elif self._on_list_changed is not None and type(message) in _LIST_CHANGES:
            await self._on_list_changed(self, _LIST_CHANGES[type(message)])
        elif isinstance(message, Exception):
            logger.info("MCP server %r: transport error %r", self.name, message)

    def _mark_stale(self) -> None:
        if self._settled.is_set():
            self._settled = anyio.Event()
        self._dirty.set()

    async def _follow(self, changes: Subscription) -> None:
        """Drain the listen stream (its events also reach ``_on_message``)."""
        try:
            async for _event in changes:
                self._mark_stale()
        except SubscriptionLost as exc:
            logger.info("MCP server %r: no more tool list changes (%s)", self.name, exc)

    async def _refresh_loop(self, client: Client, registered: anyio.Event) -> None:
        await registered.wait()  # the manager has named and registered the first listing
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            try:
                with anyio.fail_after(self.spec.connect_timeout_s):
                    listing = await self._list_tools(client)
            except Exception as exc:
                await self._warn(f"MCP server '{self.name}' changed its tools but listing them "
                                 f"again failed ({_describe(exc)}); it keeps its old tools.")
            else:
                self.listing = listing
                await self._on_tools_changed(self)
            if not self._dirty.is_set():
                self._settled.set()

    async def check(self, timeout_s: float) -> bool:
        """Whether the server still answers: a ``tools/list`` within ``timeout_s`` seconds
        (``ping`` is gone as of protocol 2026-07-28, and a listing works in every era). A
        listing that changed meanwhile updates the tools as a ``list_changed`` would."""
        client = self._client
        if client is None or self.state != "connected":
            return False
        try:
            with anyio.fail_after(timeout_s):
                listing = await self._list_tools(client)
        except Exception as exc:
            logger.info("MCP server %r failed its health check: %r", self.name, exc)
            return False
        if listing != self.listing:
            self.listing = listing
            await self._on_tools_changed(self)
        return True

    async def settled(self) -> None:
        """Wait (at most ``connect_timeout_s``) for a tool list refresh in progress."""
        with anyio.move_on_after(self.spec.connect_timeout_s):
            await self._settled.wait()

    # -- tools/call -------------------------------------------------------------------------
    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call ``tool`` with ``arguments``; every failure to get an answer is a ToolError.

        Cancelling the calling task cancels the request (the SDK sends
        ``notifications/cancelled``, or aborts the HTTP request on 2026-07-28).
        """
        client = self._client
        if client is None or self.state != "connected":
            raise ToolError(f"The MCP server '{self.name}' is not connected ({self.detail}).")
        try:
            result = await client.call_tool(tool, arguments,
                                            read_timeout_seconds=self.spec.call_timeout_s)
        except MCPError as exc:
            raise await self._call_error(tool, exc) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream,
                httpx2.HTTPError, OSError) as exc:
            await self._lost(f"{type(exc).__name__}: {exc}")
            raise ToolError(self.redact(
                f"The connection to the MCP server '{self.name}' failed during the call "
                f"({type(exc).__name__}: {exc}).")) from exc
        await anyio.lowlevel.checkpoint()  # let a list_changed that came first be seen
        await self.settled()
        return result

    # -- resources/list and resources/read ---------------------------------------------------
    @property
    def offers_resources(self) -> bool:
        """Whether the server declared the ``resources`` capability."""
        client = self._client
        return client is not None and client.server_capabilities.resources is not None

    async def list_resources(self, cursor: str | None) -> types.ListResourcesResult:
        """One page of the server's resources (``resources/list``); ToolError on failure."""
        return await self._request("listing resources",
                                   lambda client: client.list_resources(cursor=cursor))

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """The contents of ``uri`` (``resources/read``); ToolError on failure (the server's
        own error for an unknown URI is in the message)."""
        return await self._request(f"reading {uri}", lambda client: client.read_resource(uri))

    # -- prompts/list and prompts/get ---------------------------------------------------------
    @property
    def offers_prompts(self) -> bool:
        """Whether the server declared the ``prompts`` capability."""
        client = self._client
        return client is not None and client.server_capabilities.prompts is not None

    async def list_prompts(self) -> list[types.Prompt]:
        """Every prompt of the server (all pages of ``prompts/list``); ToolError on failure."""
        prompts: list[types.Prompt] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await self._request("listing prompts",
                                       lambda client, at=cursor: client.list_prompts(cursor=at))
            prompts.extend(page.prompts)
            cursor = page.next_cursor
            if cursor is None:
                return prompts
        raise ToolError(f"The MCP server '{self.name}' listed more than {MAX_LIST_PAGES} "
                        "pages of prompts.")

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        """The prompt ``name`` expanded with ``arguments`` (``prompts/get``); ToolError on
        failure."""
        return await self._request(f"getting the prompt {name}",
                                   lambda client: client.get_prompt(name, arguments))

    async def _request(self, what: str, send: Callable[[Client], Awaitable[_T]]) -> _T:
        """``send`` on the open session within ``call_timeout_s``; every failure to get an
        answer is a ToolError saying ``what`` failed."""
        client = self._client
        if client is None or self.state != "connected":
            raise ToolError(f"The MCP server '{self.name}' is not connected ({self.detail}).")
        try:
            with anyio.fail_after(self.spec.call_timeout_s):
                return await send(client)
        except TimeoutError as exc:
            raise ToolError(f"The MCP server '{self.name}' did not answer {what} within "
                            f"{self.spec.call_timeout_s:g} s.") from exc
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                await self._lost("the connection closed")
            raise ToolError(self.redact(f"The MCP server '{self.name}' answered {what} with "
                                        f"an error: {exc.message}")) from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream,
                httpx2.HTTPError, OSError) as exc:
            await self._lost(f"{type(exc).__name__}: {exc}")
            raise ToolError(self.redact(
                f"The connection to the MCP server '{self.name}' failed {what} "
                f"({type(exc).__name__}: {exc}).")) from exc

    async def _call_error(self, tool: str, exc: MCPError) -> ToolError:
        if exc.code == REQUEST_TIMEOUT:
            return ToolError(f"{tool} on the MCP server '{self.name}' did not answer within "
                             f"{self.spec.call_timeout_s:g} s; the call was cancelled.")
        if exc.code == CONNECTION_CLOSED:
            await self._lost("the connection closed")
            return ToolError(f"The MCP server '{self.name}' closed the connection during the "
                             "call (it may have crashed or exited).")
        return ToolError(self.redact(f"The MCP server '{self.name}' answered the call of "
                                     f"{tool} with an error: {exc.message}"))

    async def _lost(self, why: str) -> None:
        if self.state != "connected":
            return
        self.state, self.detail = "lost", f"lost ({why})"
        await self._warn(f"MCP server '{self.name}' stopped answering ({why}); its tools fail "
                         "for the rest of this run.")


async def sandbox_status(specs: Iterable[McpServerSpec], setting: str) -> SandboxStatus:
    """How the stdio servers among ``specs`` run under the host's ``setting`` ("auto", "off")."""
    if not any(spec.transport == "stdio" and spec.sandbox for spec in specs):
        return SandboxStatus(False, "not sandboxed: no stdio server asks for it")
    # The first probe starts a real sandbox (up to 10 s), then it is cached per binary.
    return await aresolve_status(setting)


def _secret_values(spec: McpServerSpec) -> list[str]:
    """The configured values worth hiding (a header's token too), longest first."""
    values: set[str] = set()
    for value in (*spec.env.values(), *spec.headers.values()):
        values.update(part for part in (value, *value.split()) if len(part) >= _SECRET_MIN_CHARS)
    return sorted(values, key=len, reverse=True)


def _describe(exc: BaseException) -> str:
    """Why a connection failed, as a short clause for people."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, UrlRefused):
        return f"its URL was refused: {exc.reason}"
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "it closed the connection before it was ready"
    if isinstance(exc, MCPError):
        return f"it failed to initialize: {exc.message}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"it answered HTTP {exc.response.status_code}"
    if isinstance(exc, httpx2.HTTPError):
        return f"it could not be reached ({type(exc).__name__}: {exc})"
    if isinstance(exc, OSError):
        return f"it could not be started ({exc})"
    return f"{type(exc).__name__}: {exc}"


def _stderr_tail(errlog: TextIO | None) -> str:
    """The end of what a stdio server wrote to stderr, as a suffix for a failure detail."""
    if errlog is None:
        return ""
    try:
        errlog.seek(0)
        text = errlog.read().strip()
    except (OSError, ValueError):
        return ""
    text = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    if not text:
        return ""
    if len(text) > _STDERR_TAIL_CHARS:  # the headline of an error and where it ended
        half = _STDERR_TAIL_CHARS // 2
        text = f"{text[:half]} ... {text[-half:]}"
    return f"; its error output: {text}"
