"""The worker's warm MCP pool (:class:`apps.engine.mcp.McpPool`), one per event loop, built
from the ``CONFAB`` settings (``MCP_IDLE_TIMEOUT_S``, ``MCP_MAX_PROCESSES``)."""

from __future__ import annotations

import asyncio
import weakref

from django.conf import settings

from apps.engine.mcp import McpPool

__all__ = ["McpPools", "mcp_pools"]


class McpPools:
    """One :class:`McpPool` per event loop: a connection's streams belong to the loop that
    opened them (a server process has one loop, so in practice one pool)."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, McpPool] = (
            weakref.WeakKeyDictionary())

    def get(self) -> McpPool:
        """The running loop's pool, made on first use (call inside the loop)."""
        loop = asyncio.get_running_loop()
        pool = self._by_loop.get(loop)
        if pool is None:
            conf = settings.CONFAB
            pool = self._by_loop[loop] = McpPool(
                idle_timeout_s=conf["MCP_IDLE_TIMEOUT_S"],
                max_processes=conf["MCP_MAX_PROCESSES"],
                allow_private_network=conf["ALLOW_PRIVATE_NETWORK"], sandbox=conf["SANDBOX"])
        return pool

    async def aclose_all(self) -> None:
        """Close the running loop's pool and every server in it (at shutdown)."""
        pool = self._by_loop.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()


mcp_pools = McpPools()
"""The process-wide pools."""
