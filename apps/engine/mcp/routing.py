"""Which run a pooled connection's server is talking to when it asks something back.

A pooled connection (:mod:`.pool`) serves every run of one team (one :class:`ServerKey`), so
a server's ``elicitation/create`` must reach the run whose request caused it, and no other
(spec: ``client/elicitation``, protocol 2025-11-25: servers send it while handling a client
request). Each run's tools reach the connection through a :class:`CallerView`, which marks the
request as that run's (:meth:`CallRouter.call`) while it is in flight. Then
:meth:`CallRouter.caller` names the run:

- the caller in context, when the SDK answers the question in the calling task (2026-07-28:
  the question comes back inside the call's result, ``InputRequiredResult``, SEP-2322);
- otherwise (before 2026-07-28 the question is a server-to-client request the session's
  receive task handles, and on stdio nothing on the wire links it to the call) the only run
  with a request in flight on that connection;
- nobody when no run, or more than one, has a request in flight: the pool declines then.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import mcp_types as types

if TYPE_CHECKING:
    from apps.engine.mcp.connection import ServerConnection

__all__ = ["CallRouter", "CallerView", "context_without_caller"]

_CALLER: contextvars.ContextVar[object | None] = contextvars.ContextVar("confab_mcp_caller",
                                                                       default=None)


class CallRouter:
    """The runs with requests in flight on one connection (see the module doc)."""

    def __init__(self) -> None:
        self._in_flight: dict[object, int] = {}

    @contextmanager
    def call(self, caller: object) -> Iterator[None]:
        """Mark the requests sent inside the block as ``caller``'s (a run's manager)."""
        token = _CALLER.set(caller)
        self._in_flight[caller] = self._in_flight.get(caller, 0) + 1
        try:
            yield
        finally:
            left = self._in_flight[caller] - 1
            if left:
                self._in_flight[caller] = left
            else:
                del self._in_flight[caller]
            _CALLER.reset(token)

    def caller(self) -> object | None:
        """The run a server-initiated request belongs to, or None when none can be named."""
        current = _CALLER.get()
        if current is not None and current in self._in_flight:
            return current
        busy = list(self._in_flight)
        return busy[0] if len(busy) == 1 else None


def context_without_caller() -> contextvars.Context:
    """A copy of the current context naming no caller: for the tasks that serve a pooled
    connection, which must not inherit the run that happened to start it."""
    context = contextvars.copy_context()
    context.run(_CALLER.set, None)
    return context


class CallerView:
    """A pooled ``connection`` as one run (or one person's request) sees it: ``name`` and the
    connection's requests (ToolError as it raises them), each marked as ``caller``'s while in
    flight."""

    def __init__(self, connection: ServerConnection, caller: object) -> None:
        self.connection = connection
        self.name = connection.name
        self._caller = caller

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        with self.connection.calls.call(self._caller):
            return await self.connection.call_tool(tool, arguments)

    async def list_resources(self, cursor: str | None) -> types.ListResourcesResult:
        with self.connection.calls.call(self._caller):
            return await self.connection.list_resources(cursor)

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        with self.connection.calls.call(self._caller):
            return await self.connection.read_resource(uri)

    async def list_prompts(self) -> list[types.Prompt]:
        with self.connection.calls.call(self._caller):
            return await self.connection.list_prompts()

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        with self.connection.calls.call(self._caller):
            return await self.connection.get_prompt(name, arguments)
