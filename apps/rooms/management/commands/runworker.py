"""``manage.py runworker``: channels' command with :class:`apps.rooms.shutdown.ClosingWorker`,
so a stopping worker closes its warm MCP servers and provider clients (and SIGTERM stops it
as Ctrl-C does)."""

from __future__ import annotations

from channels.management.commands import runworker

from apps.rooms.shutdown import ClosingWorker


class Command(runworker.Command):
    worker_class = ClosingWorker
