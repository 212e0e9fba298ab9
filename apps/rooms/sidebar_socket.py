"""One conversation socket's part in its room's sidebar (docs/protocol.md, "The sidebar").

Every socket of a room watches the room's group (:func:`apps.realtime.groups.room_group`)
through this process's :class:`~apps.rooms.fanout.RoomFanout`, which knows who is in each
conversation of the room (presence kept per process, :mod:`apps.rooms.presence`). A socket
whose client sent a ``sidebar`` frame (the room page does) is *subscribed*: it gets the
``sidebar`` frame (the rows of :mod:`apps.rooms.sidebar`), then a ``sidebar_conversation``
frame per row that changes, a ``sidebar_removed`` frame per conversation archived or deleted,
and ``sidebar_presence`` frames. Others (scripts) get none of these, so what they read is
unchanged. Joins and leaves are rare, and no token or delta ever reaches the room's group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async

from apps.engine.clock import Clock
from apps.realtime.broadcast import broadcast_layer
from apps.realtime.groups import room_group
from apps.rooms.fanout import RoomFanout, Watcher, fanouts
from apps.rooms.presence import Person
from apps.rooms.sidebar import sidebar_rows

__all__ = ["SidebarHandlers", "SidebarWatch"]


class SidebarWatch:
    """One socket (``watcher``) in its room's fanout, and whether its client shows the sidebar.

    ``me`` is ``{"id", "name"}``; ``send_json(frame)`` sends the socket's client a frame.
    """

    def __init__(self, watcher: Watcher, *, room_id: int, conversation_id: int, me: Person,
                 clock: Clock, interval_s: float,
                 send_json: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self.watcher, self.room_id = watcher, room_id
        self.me = {**me, "conversation_id": conversation_id}
        self.subscribed = False
        self._send_json = send_json
        self._clock, self._interval_s = clock, interval_s
        self.fanout: RoomFanout | None = None

    async def start(self) -> None:
        """Watch the room's group: the room hears that this socket is watching."""
        self.fanout = await fanouts().watch(room_group(self.room_id), self._fanout,
                                            self.watcher, self.me)  # type: ignore[assignment]

    async def stop(self) -> None:
        """Stop watching the room's group (the room hears it); idempotent."""
        fanout, self.fanout = self.fanout, None
        if fanout is not None:
            await fanouts().unwatch(fanout, self.watcher)

    def _fanout(self) -> RoomFanout:
        return RoomFanout(broadcast_layer(), room_group(self.room_id), clock=self._clock,
                          interval_s=self._interval_s)

    async def subscribe(self) -> None:
        """The client shows the sidebar: send the rows and who is where, then changes."""
        self.subscribed = True
        rows, more = await database_sync_to_async(sidebar_rows)(
            self.room_id, self.me["conversation_id"])
        await self._send_json({"type": "sidebar", "conversations": rows, "more": more})
        if self.fanout is not None:
            self.fanout.subscribe(self.watcher)

    async def changed(self, row: dict[str, Any]) -> None:
        """A conversation's row changed (:func:`apps.rooms.sidebar.sidebar_changed_on_commit`)."""
        if self.subscribed:
            await self._send_json({"type": "sidebar_conversation", "conversation": row})

    async def removed(self, conversation_id: int) -> None:
        """A conversation was archived or deleted
        (:func:`apps.rooms.sidebar.sidebar_removed_on_commit`)."""
        if self.subscribed:
            await self._send_json({"type": "sidebar_removed", "conversation_id": conversation_id})


class SidebarHandlers:
    """The room group's row messages, for a consumer that has a :class:`SidebarWatch` as
    ``sidebar`` (its inbox calls ``room_conversation`` for ``{"type": "room.conversation"}``,
    ...)."""

    sidebar: SidebarWatch

    async def room_conversation(self, message: dict[str, Any]) -> None:
        await self.sidebar.changed(message["conversation"])

    async def room_conversation_removed(self, message: dict[str, Any]) -> None:
        await self.sidebar.removed(message["conversation_id"])
