"""The run worker: a Channels consumer on the ``agent-runs`` channel (DESIGN 3.2).

In the embedded default it runs inside the server process (``manage.py serve``); with Redis it
runs in ``manage.py runworker agent-runs`` processes. A handler never blocks: ``run.start``
starts hosting the run as a task, then returns; the host's first thread hop loads what the
run needs and claims it (one winner: :func:`apps.rooms.services.runs.run_claim`). The worker
joins each hosted run's group, so stop, decide and answer messages reach it wherever they
were sent from.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.consumer import AsyncConsumer

from apps.realtime.groups import run_group
from apps.realtime.outage import OutlastingLayer, outlasting
from apps.rooms.host import RunHost
from apps.rooms.sweeper import ensure_sweeper

__all__ = ["RunWorkerConsumer"]

logger = logging.getLogger(__name__)


class RunWorkerConsumer(AsyncConsumer):
    """Hosts runs. Messages: ``run.start`` {run_id}; ``run.stop`` {run_id, stopped_by} (who
    stopped it, ``{id, name}``; none when a newer run ends a finished one's notes agent);
    ``run.decide`` {run_id, tool_call_id, approved, by, arguments}; ``run.answer`` {run_id,
    question_id, text, by}; ``run.elicit`` {run_id, elicitation_id, action, content, by}."""

    hosts: dict[int, RunHost]
    _layer: OutlastingLayer | None = None

    @property
    def channel_layer(self) -> OutlastingLayer | None:
        return self._layer

    @channel_layer.setter
    def channel_layer(self, layer: object) -> None:
        # AsyncConsumer.__call__ sets the layer, then receives from it: wrapped, the worker's
        # own receive and its runs' groups outlast an outage (apps.realtime.outage).
        self._layer = None if layer is None else outlasting(layer)

    async def run_start(self, message: dict[str, Any]) -> None:
        ensure_sweeper()
        run_id = int(message["run_id"])
        if not hasattr(self, "hosts"):
            self.hosts = {}
        if run_id in self.hosts:
            return  # dispatched again while this worker hosts it
        host = self.hosts[run_id] = RunHost(run_id)
        await self.channel_layer.group_add(run_group(run_id), self.channel_name)
        task = asyncio.create_task(self._host(host), name=f"run-host:{run_id}")
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def _host(self, host: RunHost) -> None:
        try:
            await host.host(self.channel_name)  # claims it
        except Exception:  # host() ends the run itself; this is the last line of defence
            logger.exception("run %s crashed its host", host.run_id)
        finally:
            self.hosts.pop(host.run_id, None)
            await self.channel_layer.group_discard(run_group(host.run_id), self.channel_name)

    def _host_of(self, message: dict[str, Any]) -> RunHost | None:
        return getattr(self, "hosts", {}).get(int(message["run_id"]))

    async def run_stop(self, message: dict[str, Any]) -> None:
        if (host := self._host_of(message)) is not None:
            host.stop(stopped_by=message.get("stopped_by"))

    async def run_decide(self, message: dict[str, Any]) -> None:
        if (host := self._host_of(message)) is not None:
            host.decide(message["tool_call_id"], bool(message["approved"]), message["by"],
                        message.get("arguments"))

    async def run_answer(self, message: dict[str, Any]) -> None:
        if (host := self._host_of(message)) is not None:
            host.answer(message["question_id"], message["text"], message["by"])

    async def run_elicit(self, message: dict[str, Any]) -> None:
        if (host := self._host_of(message)) is not None:
            host.elicit(message["elicitation_id"], message["action"], message["content"],
                        message["by"])
