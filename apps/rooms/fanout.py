"""A conversation's and a room's broadcasts, fanned out to this process's sockets (issue 20).

Each process joins a conversation's group (and a room's) once, through a
:class:`~apps.realtime.hub.GroupChannel` of the broadcast layer, and hands every message to the
sockets of this process that watch it: a logged event's ``frame`` text, encoded once by the
writer, goes to each socket's inbox as it is (the socket checks its seq and sends it). Presence
is kept here too, per process (:mod:`apps.rooms.presence`), so a join storm costs one message
per process per interval instead of one per socket per join.

A socket is a :class:`Watcher`: ``deliver_at_once(message)`` sends a logged event at once when
the socket is idle, else ``deliver(message)`` queues it for the socket's own task (so a slow
socket, say one filling a gap from the store, holds up nobody else); ``lost()`` tells it the
group's channel failed (it closes; its client reconnects with ``after_seq``).
Messages a socket gets: the group's own (``conv.event``, ``conv.hwm``, ``room.conversation``,
``room.conversation_removed``) and ``{"type": "local.frame", "text": ...}``, a frame to send
as it is (presence, typing).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from apps.engine.clock import Clock
from apps.realtime.hub import GroupChannel
from apps.realtime.outage import LAYER_DOWN
from apps.rooms.presence import Person, Presence, Throttle

__all__ = ["ConversationFanout", "Fanout", "RoomFanout", "Watcher", "fanouts"]


class Watcher(Protocol):
    """A socket as a fanout sees it."""

    channel_name: str

    def deliver(self, message: dict[str, Any]) -> None:
        """Queue ``message`` for the socket (never blocks)."""
        ...

    async def deliver_at_once(self, message: dict[str, Any]) -> bool:
        """Handle ``message`` now if the socket is idle and that needs no wait (no store read);
        False: it did not, queue it."""
        ...

    def lost(self) -> None:
        """The group's channel failed: the socket should close."""
        ...


class Fanout:
    """One group of the broadcast layer in this process: its watchers and their presence.

    Subclasses say which frame shows presence (:meth:`presence_frame`) and who gets it
    (:meth:`shows_presence`). ``interval_s`` is ``PRESENCE_INTERVAL_S``.
    """

    def __init__(self, layer: Any, group: str, *, clock: Clock, interval_s: float) -> None:
        self.group = group
        self.watchers: dict[str, Watcher] = {}
        self.presence = Presence()
        self.channel = GroupChannel(layer, group, on_message=self._heard, on_lost=self._lost)
        self._frames = Throttle(clock, interval_s)
        self._announces = Throttle(clock, interval_s)
        self._clock = clock
        self._frame_due = self._announce_due = False
        self._ask = True  # the first list this process sends asks the others to answer
        self._shown: dict[str, str] = {}  # watcher -> the presence frame text it was sent
        self._task: asyncio.Task[None] | None = None
        self.closed = False

    # -- watchers -----------------------------------------------------------------------------
    def add(self, watcher: Watcher, person: Person) -> None:
        """A socket of this process watches the group now; it is shown presence at once."""
        self.watchers[watcher.channel_name] = watcher
        self.presence.local[watcher.channel_name] = person
        if self.shows_presence(watcher):
            self.show_presence_to(watcher)
        self._changed(announce=True)

    def remove(self, watcher: Watcher) -> None:
        """A socket stopped watching."""
        self.watchers.pop(watcher.channel_name, None)
        self._shown.pop(watcher.channel_name, None)
        if self.presence.local.pop(watcher.channel_name, None) is not None:
            self._changed(announce=True)

    def show_presence_to(self, watcher: Watcher) -> None:
        """Send ``watcher`` who is present now (it started to show it). This counts as the
        interval's frame: the others hear of the change at the interval's end."""
        self._show(watcher, self._frame_text())
        self._frames.ready()

    def shows_presence(self, watcher: Watcher) -> bool:
        """Whether ``watcher``'s client is shown this group's presence."""
        return True

    def presence_frame(self) -> dict[str, Any]:
        """The frame that shows who is present."""
        raise NotImplementedError

    async def close(self) -> None:
        """The last watcher left: tell the other processes, stop, leave the group."""
        self.closed = True
        if self._task is not None:
            self._task.cancel()
        with contextlib.suppress(*LAYER_DOWN):  # down: the others keep us till they hear again
            await self.channel.send(self._list(ask=False))
        await self.channel.close()

    # -- the group's messages -----------------------------------------------------------------
    async def _heard(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "presence.list":
            if message["channel"] == self.channel.channel:
                return  # our own
            changed = self.presence.heard(message["channel"], message["people"])
            if message.get("ask"):
                self._announce_due = True
            if changed or message.get("ask"):
                self._changed(announce=False)
        elif kind == "presence.typing":
            text = json.dumps({"type": "presence", "typing": message["user"]})
            self._each({"type": "local.frame", "text": text})
        else:
            for watcher in list(self.watchers.values()):
                if not await watcher.deliver_at_once(message):
                    watcher.deliver(message)

    def _each(self, message: dict[str, Any]) -> None:
        for watcher in list(self.watchers.values()):
            watcher.deliver(message)

    def _lost(self, error: BaseException) -> None:
        self.closed = True
        for watcher in list(self.watchers.values()):
            watcher.lost()

    # -- presence, throttled --------------------------------------------------------------------
    def _changed(self, *, announce: bool) -> None:
        self._frame_due = True
        self._announce_due = self._announce_due or announce
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._send_due(), name=f"presence {self.group}")

    async def _send_due(self) -> None:
        """Send what the throttles allow, and wait for them while something is held back."""
        while not self.closed and (self._frame_due or self._announce_due):
            if self._announce_due and self._announces.ready():
                self._announce_due = False
                await self._announce()
            if self._frame_due and self._frames.wait_s() == 0:
                self._frame_due = False
                if self._show_all(self._frame_text()):
                    self._frames.ready()
            waits = [throttle.wait_s() for throttle, due in (
                (self._frames, self._frame_due), (self._announces, self._announce_due)) if due]
            if waits:
                await self._clock.sleep(min(waits))

    async def _announce(self) -> None:
        message, self._ask = self._list(ask=self._ask), False
        with contextlib.suppress(*LAYER_DOWN):  # presence is ephemeral: the next change says it
            await self.channel.send(message)

    def _list(self, *, ask: bool) -> dict[str, Any]:
        people = [] if self.closed else self.presence.mine()
        return {"type": "presence.list", "channel": self.channel.channel, "people": people,
                "ask": ask}

    def _frame_text(self) -> str:
        return json.dumps(self.presence_frame())

    def _show_all(self, text: str) -> bool:
        """Send the frame to every watcher shown presence that was last shown another; returns
        whether any was sent."""
        sent = False
        for watcher in list(self.watchers.values()):
            if self.shows_presence(watcher) and self._shown.get(watcher.channel_name) != text:
                self._show(watcher, text)
                sent = True
        return sent

    def _show(self, watcher: Watcher, text: str) -> None:
        self._shown[watcher.channel_name] = text
        watcher.deliver({"type": "local.frame", "text": text})


class ConversationFanout(Fanout):
    """A conversation's group: its events, marks, presence and typing."""

    def presence_frame(self) -> dict[str, Any]:
        """``{"type": "presence", "present": [PERSON, ...]}`` (docs/protocol.md)."""
        return {"type": "presence", "present": self.presence.everyone()}


class RoomFanout(Fanout):
    """A room's group: its conversations' rows and who is in each (the sidebar). Only the
    sockets whose client asked for the sidebar are shown presence."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subscribed: set[str] = set()

    def shows_presence(self, watcher: Watcher) -> bool:
        return watcher.channel_name in self.subscribed

    def subscribe(self, watcher: Watcher) -> None:
        """``watcher``'s client shows the sidebar now: it is shown who is where, then changes."""
        self.subscribed.add(watcher.channel_name)
        self.show_presence_to(watcher)

    def remove(self, watcher: Watcher) -> None:
        self.subscribed.discard(watcher.channel_name)
        super().remove(watcher)

    def presence_frame(self) -> dict[str, Any]:
        """``{"type": "sidebar_presence", "present": {"<conversation id>": [PERSON, ...]}}``:
        each person once per conversation, by name; conversations nobody watches left out."""
        rooms: dict[str, dict[int, Person]] = {}
        for person in self.presence.everyone():
            people = rooms.setdefault(str(person["conversation_id"]), {})
            people[person["id"]] = {"id": person["id"], "name": person["name"]}
        return {"type": "sidebar_presence", "present": {
            conversation: sorted(people.values(), key=lambda p: p["name"])
            for conversation, people in sorted(rooms.items())}}


class Fanouts:
    """This event loop's open fanouts, by group: opened with a group's first watcher, closed
    with its last. One lock per group orders the openings and closings."""

    def __init__(self) -> None:
        self._open: dict[str, Fanout] = {}
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary())

    async def watch(self, group: str, make: Callable[[], Fanout], watcher: Watcher,
                    person: Person) -> Fanout:
        """Add ``watcher`` (its client shows ``person``) to the group's fanout, opening it if
        need be with ``make()`` (a fanout of ``group``, on the broadcast layer). Raises what
        the layer raises on opening."""
        async with self._lock(group):
            fanout = self._open.get(group)
            if fanout is None or fanout.closed:  # closed: its channel failed
                fanout = make()
                await fanout.channel.open()
                self._open[group] = fanout
            fanout.add(watcher, person)
            return fanout

    async def unwatch(self, fanout: Fanout, watcher: Watcher) -> None:
        """Remove ``watcher``; the group's last watcher closes the fanout."""
        async with self._lock(fanout.group):
            fanout.remove(watcher)
            if fanout.watchers:
                return
            if self._open.get(fanout.group) is fanout:
                del self._open[fanout.group]
            await fanout.close()

    def _lock(self, group: str) -> asyncio.Lock:
        lock = self._locks.get(group)
        if lock is None:
            lock = self._locks[group] = asyncio.Lock()
        return lock


_registries: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Fanouts] = (
    weakref.WeakKeyDictionary())


def fanouts() -> Fanouts:
    """The running event loop's fanouts (one per Daphne process; tests have a loop each)."""
    loop = asyncio.get_running_loop()
    registry = _registries.get(loop)
    if registry is None:
        registry = _registries[loop] = Fanouts()
    return registry
