"""The run worker process's ASGI server: channels' ``Worker`` over a layer that outlasts an
outage (:func:`apps.realtime.outage.outlasting`), closing its pools when it stops
(:class:`apps.rooms.shutdown.ClosingWorker`).

channels' ``Worker.listener`` awaits ``channel_layer.receive`` and lets its error out: when
Redis died, the redis ``ConnectionError`` ended ``handle()`` and the process exited, cancelling
every run it hosted (issue 26). Here the listener's receive waits for the layer to come back, so
hosted runs go on. ``manage.py runworker`` (:mod:`apps.rooms.management.commands.runworker`)
and the embedded worker (:mod:`apps.rooms.embedded`) both use it; only ``runworker`` calls
:meth:`OutlastingWorker.run`, which freezes the process's startup heap (the embedded worker
runs in ``manage.py serve``'s loop).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from apps.common.event_loops import new_event_loop
from apps.common.heap import freeze_startup_heap
from apps.realtime.outage import outlasting
from apps.rooms.shutdown import ClosingWorker

__all__ = ["OutlastingWorker"]

logger = logging.getLogger(__name__)


class OutlastingWorker(ClosingWorker):
    """``Worker`` (same arguments) whose receive outlasts a channel-layer outage, whose
    ``arun`` (``runworker``) closes the pools when it stops (:class:`ClosingWorker`) and whose
    ``run`` runs it on the configured event loop (:mod:`apps.common.event_loops`)."""

    def __init__(self, application: Any, channels: list[str], channel_layer: Any,
                 max_applications: int = 1000) -> None:
        super().__init__(application, channels, outlasting(channel_layer), max_applications)

    def run(self) -> None:
        """asgiref's ``StatelessServer.run`` on a loop of :func:`new_event_loop`, the heap
        as the process started frozen first (:mod:`apps.common.heap`)."""
        freeze_startup_heap()
        try:
            asyncio.run(self.arun(), loop_factory=new_event_loop)
        except KeyboardInterrupt:
            logger.info("Exiting due to Ctrl-C/interrupt")
