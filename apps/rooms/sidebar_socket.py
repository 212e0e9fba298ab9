"""One conversation socket's part in its room's sidebar (docs/protocol.md, "The sidebar").

Every socket of a room joins the room's group (:func:`apps.realtime.groups.room_group`) and
tells it which conversation it watches, so the room knows who is in each conversation. A
socket whose client sent a ``sidebar`` frame (the room page does) is *subscribed*: it gets the
``sidebar`` frame (the rows of :mod:`apps.rooms.sidebar`), then a ``sidebar_conversation``
frame per row that changes, a ``sidebar_removed`` frame per conversation archived or deleted,
and ``sidebar_presence`` frames. Others (scripts) get none of
these, so what they read is unchanged.

Presence here is the room-wide twin of :mod:`apps.rooms.presence` and reuses its
:class:`~apps.rooms.presence.Roster`: the same throttles (at most one frame and one answer per
``PRESENCE_INTERVAL_S``), with people keyed by the conversation they are in. Joins and leaves
are rare, and no token or delta ever reaches the room's group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer

from apps.engine.clock import Clock
from apps.realtime.groups import room_group
from apps.rooms.presence import Person, Roster
from apps.rooms.sidebar import sidebar_rows

__all__ = ["RoomRoster", "SidebarHandlers", "SidebarWatch"]


class RoomRoster(Roster):
    """A :class:`Roster` of the whole room: each person dict also names its
    ``conversation_id``, and the frame lists who is in each conversation."""

    def frame(self) -> dict[str, Any]:
        """``{"type": "sidebar_presence", "present": {"<conversation id>": [PERSON, ...]}}``:
        each person once per conversation, by name; conversations nobody watches left out."""
        rooms: dict[str, dict[int, Person]] = {}
        for person in self.present.values():
            people = rooms.setdefault(str(person["conversation_id"]), {})
            people[person["id"]] = {"id": person["id"], "name": person["name"]}
        return {"type": "sidebar_presence", "present": {
            conversation: sorted(people.values(), key=lambda p: p["name"])
            for conversation, people in sorted(rooms.items())}}


class SidebarWatch:
    """The room group membership, the room roster and the subscription of one socket.

    ``me`` is ``{"id", "name"}``; ``send_json(frame)`` sends the socket's client a frame.
    """

    def __init__(self, layer: BaseChannelLayer, channel: str, *, room_id: int,
                 conversation_id: int, me: Person, clock: Clock, interval_s: float,
                 send_json: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self.layer, self.channel, self.room_id = layer, channel, room_id
        self.group = room_group(room_id)
        self.me = {**me, "conversation_id": conversation_id}
        self.subscribed = False
        self._send_json = send_json
        self.roster = RoomRoster(clock, interval_s, me=(channel, self.me),
                                 send_frame=self._frame, announce=self._here)

    async def start(self) -> None:
        """Join the room's group and tell it this socket is watching."""
        await self.layer.group_add(self.group, self.channel)
        await self._tell("room.join")

    async def stop(self) -> None:
        """Tell the room this socket left, and leave its group."""
        await self._tell("room.leave")
        await self.layer.group_discard(self.group, self.channel)

    def close(self) -> None:
        """Stop the roster's background sender (the socket has ended)."""
        self.roster.close()

    async def subscribe(self) -> None:
        """The client shows the sidebar: send the rows and who is where, then changes."""
        self.subscribed = True
        rows, more = await database_sync_to_async(sidebar_rows)(
            self.room_id, self.me["conversation_id"])
        await self._send_json({"type": "sidebar", "conversations": rows, "more": more})
        await self._send_json(self.roster.frame())

    async def _tell(self, kind: str) -> None:
        await self.layer.group_send(self.group, {"type": kind, "channel": self.channel,
                                                 "user": self.me})

    async def _here(self) -> None:
        await self._tell("room.here")

    async def _frame(self, frame: dict[str, Any]) -> None:
        if self.subscribed:
            await self._send_json(frame)

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
    """The room group's messages, for a consumer that has a :class:`SidebarWatch` as
    ``sidebar`` (Channels calls ``room_join`` for ``{"type": "room.join"}``, ...)."""

    sidebar: SidebarWatch

    async def room_join(self, message: dict[str, Any]) -> None:
        await self.sidebar.roster.joined(message["channel"], message["user"],
                                         answer=message["channel"] != self.sidebar.channel)

    async def room_here(self, message: dict[str, Any]) -> None:
        await self.sidebar.roster.joined(message["channel"], message["user"], answer=False)

    async def room_leave(self, message: dict[str, Any]) -> None:
        await self.sidebar.roster.left(message["channel"])

    async def room_conversation(self, message: dict[str, Any]) -> None:
        await self.sidebar.changed(message["conversation"])

    async def room_conversation_removed(self, message: dict[str, Any]) -> None:
        await self.sidebar.removed(message["conversation_id"])
