"""``manage.py runworker agent-runs``: channels' command with :class:`OutlastingWorker`, so the
process outlives a channel-layer outage and, when it stops (Ctrl-C or SIGTERM), closes its warm
MCP servers and provider clients (:mod:`apps.rooms.run_worker`, :mod:`apps.rooms.shutdown`). It
overrides channels' ``runworker`` because ``apps.rooms`` comes before ``channels`` in
``INSTALLED_APPS``."""

from __future__ import annotations

from channels.management.commands.runworker import Command as ChannelsRunworker

from apps.rooms.run_worker import OutlastingWorker


class Command(ChannelsRunworker):
    help = ("Run a worker for the given channels (agent-runs), outlasting channel-layer outages "
            "and closing its pools when it stops.")
    worker_class = OutlastingWorker
