"""Outlasting a channel-layer outage (issue 26): Redis killed, restarted or unreachable.

Events are stored with their seq before they are broadcast (DESIGN 3.3), so a broadcast lost
while the layer is down costs nothing a socket cannot repair: the consumers' own receive fails,
their sockets close, and the clients reconnect with ``after_seq`` and read the gap from the
store (docs/protocol.md, Connecting). So a broadcast that fails because the layer is down is
logged and dropped (:func:`send_or_drop`), and a run worker's receive waits for the layer
to come back instead of ending the process (:func:`outlasting`). Each outage is logged once
when it starts and once when it ends (:class:`Outage`), not once per failed call.

A Redis restarted without persistence has forgotten every group: the layer from
:func:`outlasting` remembers the groups its channels joined and joins them again before it
receives after an outage, so ``run.stop`` and decisions still reach the run's worker.
"""

from __future__ import annotations

import logging
import random
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from apps.engine.clock import MONOTONIC, Clock
from apps.engine.providers.retry import backoff_s

__all__ = ["LAYER_DOWN", "LAYER_LADDER_S", "Outage", "OutlastingLayer", "outlasting",
           "send_all_or_drop", "send_or_drop"]

logger = logging.getLogger(__name__)

LAYER_DOWN: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)
"""What channels-redis raises while Redis cannot be reached (redis-py wraps socket errors in
its ``ConnectionError``; ``OSError`` covers a refused or reset connection it did not wrap)."""

LAYER_LADDER_S: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 10.0)
"""Waits in seconds between tries while the layer is down; the last one repeats. Shorter than
the providers' ladder: the layer is a local service, and channel messages expire (60 s)."""


class Outage:
    """The outages seen by one user of the layer (``what``: a phrase for the log, e.g. "run
    worker receive"). :meth:`failed` logs the first failure of an outage (warning) and returns
    the wait before the next try, from :data:`LAYER_LADDER_S` with jitter; :meth:`back` logs the
    outage's end once, with its length in seconds and how many messages it dropped."""

    def __init__(self, what: str, *, clock: Clock = MONOTONIC,
                 rng: Callable[[], float] = random.random) -> None:
        self.what = what
        self.clock = clock
        self.rng = rng
        self.since: float | None = None  # clock seconds of the outage's first failure
        self.failures = 0
        self.dropped = 0

    @property
    def down(self) -> bool:
        """Whether an outage is under way (a failure not yet followed by a success)."""
        return self.since is not None

    def failed(self, exc: BaseException, *, dropped: int = 0) -> float:
        """Count a failure (and ``dropped`` messages lost to it); seconds to wait."""
        if self.since is None:
            self.since = self.clock.now()
            logger.warning("%s: the channel layer is down (%s: %s); retrying until it is "
                           "back", self.what, type(exc).__name__, exc)
        self.dropped += dropped
        self.failures += 1
        return backoff_s(LAYER_LADDER_S, self.failures - 1, rng=self.rng)

    def back(self) -> None:
        """A call went through: end the outage, if there was one, in the log."""
        if self.since is None:
            return
        logger.warning("%s: the channel layer is back after %.1f s (%d failed tries, %d "
                       "messages dropped)", self.what, self.clock.now() - self.since,
                       self.failures, self.dropped)
        self.since, self.failures, self.dropped = None, 0, 0


_broadcasts = Outage("broadcast")


async def send_or_drop(send: Callable[[str, dict[str, Any]], Awaitable[None]], to: str,
                       messages: list[dict[str, Any]], *, outage: Outage = _broadcasts) -> int:
    """``send(to, message)`` for each message in order (``send``: a layer's ``group_send``
    or ``send``); how many were sent. While the layer is down (:data:`LAYER_DOWN`) the failed
    message and the ones after it are dropped, not tried, and the outage is logged once: only
    for messages the receivers can do without or get again (see the module docstring)."""
    for sent, message in enumerate(messages):
        try:
            await send(to, message)
        except LAYER_DOWN as exc:
            outage.failed(exc, dropped=len(messages) - sent)
            return sent
    if messages:
        outage.back()
    return len(messages)


async def send_all_or_drop(
        send_all: Callable[[list[tuple[str, dict[str, Any]]]], Awaitable[None]],
        sends: list[tuple[str, dict[str, Any]]], *, outage: Outage = _broadcasts) -> bool:
    """``send_all(sends)`` (``sends``: ``(group, message)`` pairs; ``send_all``: e.g.
    :func:`~apps.realtime.broadcast.group_send_many`); False when the layer was down
    (:data:`LAYER_DOWN`): then the messages are dropped, some perhaps sent, and the outage is
    logged once. For messages the receivers can do without or get again, as above."""
    try:
        await send_all(sends)
    except LAYER_DOWN as exc:
        outage.failed(exc, dropped=len(sends))
        return False
    if sends:
        outage.back()
    return True


class OutlastingLayer:
    """A channel layer whose ``receive`` outlasts an outage: it waits (:class:`Outage`) and
    tries again, joining the remembered groups first, instead of raising. ``group_add`` and
    ``group_discard`` are remembered and, while the layer is down, left for that rejoin.
    Everything else is the wrapped layer's own (``send`` and ``group_send`` still raise)."""

    def __init__(self, layer: Any, *, outage: Outage | None = None) -> None:
        self.layer = layer
        self.outage = outage or Outage("run worker")
        self.groups: set[tuple[str, str]] = set()  # (group, channel) joined here

    def __getattr__(self, name: str) -> Any:
        return getattr(self.layer, name)

    async def receive(self, channel: str) -> dict[str, Any]:
        """The channel's next message, however long the layer is down."""
        while True:
            try:
                if self.outage.down:
                    await self._rejoin()
                message = await self.layer.receive(channel)
            except LAYER_DOWN as exc:
                await self.outage.clock.sleep(self.outage.failed(exc))
                continue
            self.outage.back()
            return message

    async def _rejoin(self) -> None:
        for group, channel in list(self.groups):
            await self.layer.group_add(group, channel)
        if self.groups:  # a round trip went through: the layer is back
            self.outage.back()

    async def group_add(self, group: str, channel: str) -> None:
        """Join now, or (the layer is down) at the rejoin once it is back."""
        self.groups.add((group, channel))
        try:
            await self.layer.group_add(group, channel)
        except LAYER_DOWN as exc:
            self.outage.failed(exc)

    async def group_discard(self, group: str, channel: str) -> None:
        """Leave now, or (the layer is down) never join again: a restarted Redis forgot it, and
        one that comes back with it lets it expire (the layer's ``group_expiry``)."""
        self.groups.discard((group, channel))
        try:
            await self.layer.group_discard(group, channel)
        except LAYER_DOWN as exc:
            self.outage.failed(exc)


_outlasting: weakref.WeakKeyDictionary[Any, OutlastingLayer] = weakref.WeakKeyDictionary()


def outlasting(layer: Any) -> OutlastingLayer:
    """The process's :class:`OutlastingLayer` over ``layer`` (one per layer, so the worker's
    listener and its consumer share one outage and one log)."""
    if isinstance(layer, OutlastingLayer):
        return layer
    wrapped = _outlasting.get(layer)
    if wrapped is None:
        wrapped = _outlasting[layer] = OutlastingLayer(layer)
    return wrapped

