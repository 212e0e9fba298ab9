"""Presence and typing, coalesced and throttled per socket (DESIGN 3.3: "Typing and presence are
throttled per person").

Presence is ephemeral (no ``seq``, not in the log), and a naive version costs O(N²) per join
storm: every join reaches every watcher, every watcher answers the joiner and sends its client a
frame. Here a socket:

- sends its client at most one ``presence`` frame per ``interval_s`` (the first change at once,
  later ones gathered into one frame at the end of the interval), so 50 people joining within
  a moment give each client a couple of frames, not 50;
- answers joins with at most one ``presence.here`` per interval to the whole group instead of
  one per joiner (everyone who joined meanwhile learns of it from that one message);
- relays its person's ``typing`` at most once per ``typing_interval_s`` (the client shows it for
  a few seconds, docs/protocol.md): a client that sends typing in a loop cannot crowd the
  group's inboxes, which the log's events share.

Time comes from an injectable :class:`~apps.engine.clock.Clock`, so tests move it themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from apps.engine.clock import Clock

__all__ = ["Throttle", "Roster"]

Person = dict[str, Any]  # {"id": int, "name": str}


class Throttle:
    """At most one go per ``interval_s`` seconds of ``clock``: :meth:`ready` says whether one
    may go now (and counts it), :meth:`wait_s` how long until the next may."""

    def __init__(self, clock: Clock, interval_s: float) -> None:
        self.clock = clock
        self.interval_s = interval_s
        self._last: float | None = None

    def wait_s(self) -> float:
        """Seconds until a go is allowed (0: now)."""
        if self._last is None:
            return 0.0
        return max(0.0, self._last + self.interval_s - self.clock.now())

    def ready(self) -> bool:
        """Whether a go is allowed now; if so, it is counted."""
        if self.wait_s() > 0:
            return False
        self._last = self.clock.now()
        return True


class Roster:
    """Who one socket knows is watching its conversation (channel name -> person), and the
    coalesced ``presence`` frames and ``presence.here`` answers that follow from it.

    ``send_frame(frame)`` sends the socket's client a frame; ``announce()`` sends the socket's
    own ``presence.here`` to the conversation's group. Both are called from a background task
    at most once per ``interval_s``; :meth:`close` cancels it.
    """

    def __init__(self, clock: Clock, interval_s: float, *, me: tuple[str, Person],
                 send_frame: Callable[[dict[str, Any]], Awaitable[None]],
                 announce: Callable[[], Awaitable[None]]) -> None:
        self.clock = clock
        self._me = me[0]
        self.present: dict[str, Person] = {me[0]: me[1]}
        self._send_frame = send_frame
        self._announce = announce
        self._frames = Throttle(clock, interval_s)
        self._answers = Throttle(clock, interval_s)
        self._frame_due = False
        self._answer_due = False
        self._sent: dict[str, Any] | None = None
        self._task: asyncio.Task[None] | None = None

    def frame(self) -> dict[str, Any]:
        """The ``presence`` frame for now: each person once, by name."""
        people = {person["id"]: person for person in self.present.values()}
        return {"type": "presence", "present": sorted(people.values(), key=lambda p: p["name"])}

    async def joined(self, channel: str, person: Person, *, answer: bool) -> None:
        """``channel`` is watching; ``answer``: it has just joined and should hear of us. The
        socket's own join sends its client the first frame."""
        known = self.present.get(channel) == person and channel != self._me
        if known and not answer:
            return  # an answer to someone else's join: nothing new for this client
        self.present[channel] = person
        self._answer_due = self._answer_due or answer
        await self._changed()

    async def left(self, channel: str) -> None:
        """``channel`` stopped watching."""
        if self.present.pop(channel, None) is not None:
            await self._changed()

    async def _changed(self) -> None:
        self._frame_due = True
        if self._task is None or self._task.done():
            await self._send_due()  # at once when the throttles allow it
            if self._frame_due or self._answer_due:
                self._task = asyncio.create_task(self._later(), name="presence")

    async def _send_due(self) -> None:
        if self._answer_due and self._answers.ready():
            self._answer_due = False
            await self._announce()
        if self._frame_due and self._frames.wait_s() == 0:
            self._frame_due = False
            frame = self.frame()
            if frame != self._sent:  # a second tab of someone present changes nothing shown
                self._frames.ready()
                self._sent = frame
                await self._send_frame(frame)

    async def _later(self) -> None:
        """Send what the throttles held back, once they allow it."""
        while self._frame_due or self._answer_due:
            waits = [t.wait_s() for t, due in ((self._frames, self._frame_due),
                                               (self._answers, self._answer_due)) if due]
            await self.clock.sleep(min(waits))
            await self._send_due()

    def close(self) -> None:
        """Stop the background sender (the socket has ended)."""
        if self._task is not None:
            self._task.cancel()
