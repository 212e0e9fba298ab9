"""The broadcast layer: what every socket of a conversation or a room hears (issue 20).

Conversation and room groups (:func:`~apps.realtime.groups.conversation_group`,
:func:`~apps.realtime.groups.room_group`) live on a channel layer of their own, the
``broadcast`` alias of ``CHANNEL_LAYERS``: with Redis, channels-redis's pub/sub layer, where a
group message is one ``PUBLISH`` that reaches each subscribed process once (the core layer costs
four round trips per group message and one more per process that receives it), and many are one
round trip (:func:`group_send_many`, :mod:`apps.realtime.pubsub`); without Redis,
an in-memory layer of the one process. Each process joins those groups once
(:mod:`apps.realtime.hub`). Both layers deliver at most once; clients repair from the store.

Everything else — the run workers' ``agent-runs`` channel, a run's group, a person's group, the
wiki's — stays on the default layer, whose channels are queues that one consumer reads.
"""

from __future__ import annotations

from typing import Any

from channels.layers import get_channel_layer
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from apps.realtime.publish import publish

__all__ = ["BROADCAST", "broadcast_layer", "broadcast_on_commit", "group_send_many"]

BROADCAST = "broadcast"
"""The ``CHANNEL_LAYERS`` alias of the broadcast layer."""


def broadcast_layer() -> Any:
    """The broadcast layer (``CHANNEL_LAYERS["broadcast"]``). Raises ``ImproperlyConfigured``
    when settings name no such layer."""
    layer = get_channel_layer(BROADCAST)
    if layer is None:
        raise ImproperlyConfigured('CHANNEL_LAYERS has no "broadcast" layer')
    return layer


async def group_send_many(sends: list[tuple[str, dict[str, Any]]]) -> None:
    """``group_send(group, message)`` on the broadcast layer for each ``(group, message)``, in
    order: one command on Redis, a few for a large batch
    (:class:`~apps.realtime.pubsub.BatchedPubSubChannelLayer`), one after another on a
    layer without ``group_send_many``. Raises what the layer raises."""
    layer = broadcast_layer()
    send_many = getattr(layer, "group_send_many", None)
    if send_many is not None:
        await send_many(sends)
        return
    for group, message in sends:
        await layer.group_send(group, message)


def broadcast_on_commit(group: str, message: dict[str, Any]) -> None:
    """``group_send`` on the broadcast layer once the current transaction commits (at once
    outside one), through :func:`~apps.realtime.publish.publish` (from the event loop when the
    work runs in a :func:`~apps.realtime.publish.database_call`); dropped while the layer is
    down."""
    transaction.on_commit(lambda: publish("group_send", group, message, layer=BROADCAST))
