"""Broadcast after commit (DESIGN 3.3, 4): an event reaches the channel layer only once the
transaction that stored it has committed, so no client sees what the database might not keep."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

__all__ = ["group_send_on_commit", "send_on_commit"]


def group_send_on_commit(group: str, message: dict[str, Any]) -> None:
    """``group_send`` once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: async_to_sync(get_channel_layer().group_send)(group, message))


def send_on_commit(channel: str, message: dict[str, Any]) -> None:
    """``send`` to one channel once the current transaction commits."""
    transaction.on_commit(lambda: async_to_sync(get_channel_layer().send)(channel, message))
