"""``manage.py runworker agent-runs``: channels' command with :class:`OutlastingWorker`, so the
process outlives a channel-layer outage (:mod:`apps.rooms.run_worker`). It overrides channels'
``runworker`` because ``apps.rooms`` comes before ``channels`` in ``INSTALLED_APPS``."""

from __future__ import annotations

from channels.management.commands.runworker import Command as ChannelsRunworker

from apps.rooms.run_worker import OutlastingWorker


class Command(ChannelsRunworker):
    help = "Run a worker for the given channels (agent-runs), outlasting channel-layer outages."
    worker_class = OutlastingWorker
