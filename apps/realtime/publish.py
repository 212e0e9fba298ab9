"""Broadcast after commit (DESIGN 3.3, 4): an event reaches the channel layer only once the
transaction that stored it has committed, so no client sees what the database might not keep.
While the layer is down a message is dropped and logged (:mod:`apps.realtime.outage`), so the
commit's other hooks still run: a run whose ``run.start`` is dropped stays queued, and the
sweeper dispatches it again (``services.runs.runs_sweep``)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from apps.realtime.outage import send_or_drop

__all__ = ["group_send_on_commit", "send_on_commit"]


def group_send_on_commit(group: str, message: dict[str, Any]) -> None:
    """``group_send`` once the current transaction commits (at once outside one); dropped while
    the layer is down."""
    transaction.on_commit(lambda: async_to_sync(send_or_drop)(
        get_channel_layer().group_send, group, [message]))


def send_on_commit(channel: str, message: dict[str, Any]) -> None:
    """``send`` to one channel once the current transaction commits; dropped while the layer
    is down."""
    transaction.on_commit(lambda: async_to_sync(send_or_drop)(
        get_channel_layer().send, channel, [message]))
