"""One channel per process in each broadcast group its sockets watch (issue 20: capacity).

Channels gives every socket a channel of its own, and a group message reaches each channel
in the group: every streamed frame then costs every watcher a layer delivery and Channels'
per-message dispatch (a task per receive, a handler lookup), in the socket server, before
the frame is written. A process whose sockets watch a group needs the message once: a
:class:`GroupChannel` is this process's one channel in the group, read by one task that hands
each message to a listener of this process (:mod:`apps.rooms.fanout`), which hands it to its
sockets — the same ``frame`` text to each.

Delivery stays at most once, as the layer's (DESIGN 4: "The channel layer delivers at most
once"): the listeners repair what is lost from the store, by ``seq``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["GroupChannel"]

logger = logging.getLogger(__name__)


class GroupChannel:
    """This process's channel in ``group`` of ``layer``.

    After :meth:`open`, ``on_message(message)`` is awaited with each message the group gets,
    in the order the layer delivers them, from one task; it must not wait long (it sends to
    idle sockets and queues work for the others). If the layer fails while receiving,
    ``on_lost(error)`` is called once and the channel stops reading (its listener closes its
    sockets, whose clients reconnect and repair from the store). :meth:`close` leaves the
    group.
    """

    def __init__(self, layer: Any, group: str, *,
                 on_message: Callable[[dict[str, Any]], Awaitable[None]],
                 on_lost: Callable[[BaseException], None]) -> None:
        self.layer = layer
        self.group = group
        self.channel = ""
        self._on_message = on_message
        self._on_lost = on_lost
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Make the channel, join the group and start reading. Raises what the layer raises
        (nothing is left joined then)."""
        self.channel = await self.layer.new_channel(prefix="hub.")
        await self.layer.group_add(self.group, self.channel)
        self._task = asyncio.create_task(self._read(), name=f"group {self.group}")

    async def close(self) -> None:
        """Stop reading and leave the group (a failure to leave is logged: the layer forgets
        the channel when its group expires)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        try:
            await self.layer.group_discard(self.group, self.channel)
        except Exception:
            logger.warning("could not leave group %s", self.group, exc_info=True)

    async def send(self, message: dict[str, Any]) -> None:
        """``group_send`` the message to the group (this channel included). Raises what the
        layer raises."""
        await self.layer.group_send(self.group, message)

    async def _read(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("group %s: the channel layer failed: %s", self.group, exc)
                self._on_lost(exc)
                return
            try:
                await self._on_message(message)
            except Exception:  # one bad message must not end the group's reading
                logger.exception("group %s: a message could not be handled", self.group)
