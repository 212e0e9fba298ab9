"""Broadcast after commit (DESIGN 3.3, 4): an event reaches the channel layer only once the
transaction that stored it has committed, so no client sees what the database might not keep.
While the layer is down a message is dropped and logged (:mod:`apps.realtime.outage`), so the
commit's other hooks still run: a run whose ``run.start`` is dropped stays queued, and the
sweeper dispatches it again (``services.runs.runs_sweep``).

A commit hook runs on the database thread. Sending from there (``async_to_sync``) holds that
thread — the one every ``database_sync_to_async`` call of the process queues for — until the
event loop has run the send (issue 22: four such round trips in a send that starts a run). So
database work called through :func:`database_call` leaves its hooks' messages in an outbox
instead, and the event loop sends them once the call has returned, in the order they were
queued for each destination; the call's awaiter resumes only after that, so its next event
cannot overtake them. Sync code called any other way (a view, a command) still sends at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from asgiref.sync import async_to_sync
from channels import DEFAULT_CHANNEL_LAYER
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction

from apps.realtime.outage import send_all_or_drop, send_or_drop

__all__ = ["database_call", "group_send_on_commit", "publish", "send_on_commit"]

logger = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class _Send:
    """One message for the channel layer ``layer`` (an alias of ``CHANNEL_LAYERS``):
    ``method`` ``"group_send"`` (``to`` a group) or ``"send"`` (``to`` a channel); ``robust``:
    a failure is logged, not raised."""

    method: Literal["group_send", "send"]
    to: str
    message: dict[str, Any]
    robust: bool
    layer: str


_OUTBOX: ContextVar[list[_Send] | None] = ContextVar("confab_publish_outbox", default=None)


def publish(method: Literal["group_send", "send"], to: str, message: dict[str, Any], *,
            robust: bool = False, layer: str = DEFAULT_CHANNEL_LAYER) -> None:
    """Send ``message`` on the channel layer ``layer`` (an alias) from sync code (a commit
    hook): into the outbox of the :func:`database_call` it runs in, else at once through
    ``async_to_sync``. Dropped while the layer is down; ``robust``: any other failure is
    logged, never raised."""
    item = _Send(method, to, message, robust, layer)
    outbox = _OUTBOX.get()
    if outbox is not None:
        outbox.append(item)
    else:
        async_to_sync(_deliver_one)(item)


def group_send_on_commit(group: str, message: dict[str, Any]) -> None:
    """``group_send`` once the current transaction commits (at once outside one); dropped while
    the layer is down."""
    transaction.on_commit(lambda: publish("group_send", group, message))


def send_on_commit(channel: str, message: dict[str, Any]) -> None:
    """``send`` to one channel once the current transaction commits; dropped while the layer
    is down."""
    transaction.on_commit(lambda: publish("send", channel, message))


async def database_call[**P, R](function: Callable[P, R], /, *args: P.args,
                                **kwargs: P.kwargs) -> R:
    """``database_sync_to_async(function)(*args, **kwargs)``, the messages its commits publish
    sent from the event loop after it returns (or raises): each destination's in order,
    destinations side by side (:func:`_deliver`). Raises what ``function`` raised, else the
    first non-robust send failure (the other destinations are still sent)."""
    outbox: list[_Send] = []
    token = _OUTBOX.set(outbox)
    try:
        return await database_sync_to_async(function)(*args, **kwargs)
    finally:
        _OUTBOX.reset(token)
        if outbox:
            await _deliver(outbox)


async def _deliver(outbox: list[_Send]) -> None:
    """The outbox's messages, each destination's in order, destinations side by side. The
    group messages on a layer that batches them (the broadcast layer on Redis:
    ``group_send_many``) leave in one batch per layer, and per kind of failure handling:
    one for the destinations whose messages must arrive (a failure is raised), one for those
    whose messages are all robust (a failure is logged). A destination with both kinds, or on
    another layer, has its messages sent one after another."""
    by_destination: dict[tuple[str, str, str], list[_Send]] = {}
    for item in outbox:
        by_destination.setdefault((item.layer, item.method, item.to), []).append(item)
    batched = {key for key, items in by_destination.items()
               if key[1] == "group_send" and len({item.robust for item in items}) == 1
               and _batches(key[0])}
    batches: dict[tuple[str, bool], list[_Send]] = {}  # (layer, robust): in outbox order
    for item in outbox:
        if (item.layer, item.method, item.to) in batched:
            batches.setdefault((item.layer, item.robust), []).append(item)
    sends = [*(_send_batched(layer, robust, items)
               for (layer, robust), items in batches.items()),
             *(_deliver_all(items) for key, items in by_destination.items()
               if key not in batched)]
    if len(sends) == 1:  # mostly: no task to gather
        await sends[0]
        return
    results = await asyncio.gather(*sends, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


def _batches(layer: str) -> bool:
    """Whether the layer ``layer`` sends many group messages in one batch (False when
    it cannot be had: sent one by one, its failure is handled per message)."""
    try:
        return hasattr(get_channel_layer(layer), "group_send_many")
    except Exception:
        return False


async def _send_batched(layer: str, robust: bool, items: list[_Send]) -> None:
    """``items`` (group messages) in one ``group_send_many``: a failure other than an outage
    is logged when they are robust, else raised. A message that cannot be encoded fails the
    batch before anything is sent."""
    try:
        await send_all_or_drop(get_channel_layer(layer).group_send_many,
                               [(item.to, item.message) for item in items])
    except Exception:
        if not robust:
            raise
        logger.exception("a broadcast to %s failed", ", ".join(sorted({i.to for i in items})))


async def _deliver_all(items: list[_Send]) -> None:
    """One destination's messages in order; a failure of a non-robust one stops them."""
    for item in items:
        await _deliver_one(item)


async def _deliver_one(item: _Send) -> None:
    try:
        await send_or_drop(getattr(get_channel_layer(item.layer), item.method), item.to,
                           [item.message])
    except Exception:
        if not item.robust:
            raise
        logger.exception("a broadcast to %s failed", item.to)
