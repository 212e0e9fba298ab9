"""A run worker's graceful stop: its warm MCP servers, provider clients and log writer's
database connection closed while its event loop still runs.

The worker's pools (:data:`apps.integrations.mcp_pool.mcp_pools`,
:data:`apps.integrations.builders.provider_pool`) hold the loop's MCP server processes and HTTP
connections, its log writer (:mod:`apps.rooms.log_writer`) a PostgreSQL connection. Without
a close they end only with the process: the subreaper's ``PR_SET_PDEATHSIG`` sends each
server's tree SIGTERM and the sockets are dropped. Where a worker's loop ends,
:func:`close_worker_pools` closes them instead:

- ``manage.py serve`` (the embedded worker inside Daphne): :func:`close_before_reactor_shutdown`
  adds a Twisted "before shutdown" trigger; Twisted waits for the Deferred it returns while the
  asyncio loop still runs (twisted.internet.interfaces.IReactorCore.addSystemEventTrigger).
- ``manage.py runworker``: :class:`ClosingWorker`, channels' ``Worker`` that closes the pools
  when its loop's main task ends and stops on SIGTERM as on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

from channels.worker import Worker

from apps.integrations.builders import provider_pool
from apps.integrations.mcp_pool import mcp_pools
from apps.rooms.log_writer import close_log_writer

__all__ = ["ClosingWorker", "close_before_reactor_shutdown", "close_worker_pools"]

logger = logging.getLogger(__name__)


async def close_worker_pools() -> None:
    """Close the running loop's MCP pool (every server, in use or idle, with its descendants),
    its providers' HTTP clients and its log writer's database connection, and wait for them.
    Never raises: a failure is logged and the shutdown goes on."""
    results = await asyncio.gather(mcp_pools.aclose_all(), provider_pool.aclose_all(),
                                   close_log_writer(), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            logger.error("closing the worker's pools failed", exc_info=result)


def close_before_reactor_shutdown(reactor: Any) -> None:
    """Close the pools when ``reactor`` (Twisted's asyncio reactor, Daphne's) shuts down,
    before it stops the loop."""
    from twisted.internet.defer import Deferred  # Daphne's dependency, only where it serves

    reactor.addSystemEventTrigger(
        "before", "shutdown",
        lambda: Deferred.fromFuture(asyncio.ensure_future(close_worker_pools())))


class ClosingWorker(Worker):
    """channels' ``Worker`` (``runworker``) whose loop closes the pools before it ends, however
    it ends: Ctrl-C, a listener's error, or SIGTERM, which stops it as Ctrl-C does (exit status
    0) instead of killing the process."""

    async def arun(self) -> None:
        loop, main = asyncio.get_running_loop(), asyncio.current_task()
        assert main is not None
        terminated = False

        def terminate() -> None:
            nonlocal terminated
            terminated = True
            main.cancel()

        loop.add_signal_handler(signal.SIGTERM, terminate)
        try:
            await super().arun()
        except asyncio.CancelledError:
            if not terminated:
                raise
            main.uncancel()  # our own stop: a normal end, not a cancelled run
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
            await close_worker_pools()
