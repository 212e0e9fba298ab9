"""Running the ``agent-runs`` worker inside another event loop (the embedded default).

``channels.worker.Worker.run()`` (here :class:`OutlastingWorker`'s) calls ``run_until_complete``
on the current loop, which would hang a loop that is already running (Daphne's): so its two
coroutines, ``handle()`` and ``application_checker()``, are scheduled as tasks instead
(DESIGN 3.2).
"""

from __future__ import annotations

import asyncio

from channels.layers import get_channel_layer

from apps.realtime.groups import RUN_CHANNEL
from apps.rooms.run_worker import OutlastingWorker
from apps.rooms.sweeper import ensure_sweeper

__all__ = ["start_embedded_worker"]


def start_embedded_worker(application: object) -> list[asyncio.Task[None]]:
    """Start a run worker for ``application`` in the running loop; returns its tasks."""
    worker = OutlastingWorker(application=application, channels=[RUN_CHANNEL],
                              channel_layer=get_channel_layer())
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(worker.handle(), name="agent-runs-worker"),
             loop.create_task(worker.application_checker(), name="agent-runs-checker")]
    ensure_sweeper()
    return tasks
