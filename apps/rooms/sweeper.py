"""The sweeper, once per process: runs whose worker died are marked interrupted, and queued runs
nobody claimed are dispatched again or failed (``services.runs.runs_sweep``).

A sweep's broadcasts (the runs' ends, the sidebar, ``run.start``) leave from the event loop once
it returns (:func:`~apps.realtime.publish.database_call`), never from the database thread: sent
from there (``async_to_sync``) they held the thread until the loop ran them, and a process
stopping meanwhile (``manage.py serve`` on Ctrl-C) never exited, its shutdown joining a thread
that waited for a loop that had stopped."""

from __future__ import annotations

import asyncio
import logging

from django.conf import settings

from apps.realtime.publish import database_call
from apps.rooms.services.runs import runs_sweep

__all__ = ["ensure_sweeper", "sweep_forever"]

logger = logging.getLogger(__name__)
_tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}


async def sweep_forever() -> None:
    """Sweep every half of ``STALE_AFTER_S``; a failing sweep is logged and retried."""
    pause = max(settings.CONFAB["STALE_AFTER_S"] / 2, 0.5)
    while True:
        try:
            touched = await database_call(runs_sweep)
            if touched:
                logger.info("sweeper: runs %s", touched)
        except Exception:
            logger.exception("sweeper failed; trying again")
        await asyncio.sleep(pause)


def ensure_sweeper() -> None:
    """Start the sweeper in this event loop unless it runs already."""
    loop = asyncio.get_running_loop()
    task = _tasks.get(loop)
    if task is None or task.done():
        _tasks[loop] = loop.create_task(sweep_forever(), name="run-sweeper")
