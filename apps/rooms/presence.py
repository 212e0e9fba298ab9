"""Presence and typing, kept per process and throttled (DESIGN 3.3: "Typing and presence are
throttled per person").

Presence is ephemeral (no ``seq``, not in the log). Kept per socket, it costs O(N²) per join
storm: every join reaches every watcher, every watcher answers, and each answer reaches every
watcher again. Here it is kept per *process* (:mod:`apps.rooms.fanout`): a process knows its
own sockets' people and what each other process last said of its own, so a join storm costs
one message per process per interval, whatever the number of sockets:

- a process tells the group who its sockets are (``presence.list``) at most once per
  ``interval_s``, the first change at once; a process new to the group asks the others to
  answer, and they answer with their own list, at most once per interval too;
- its sockets get one ``presence`` frame per interval at most (the first change at once),
  the same text for each, and only when the list they were last shown changed;
- typing is relayed at most once per ``TYPING_INTERVAL_S`` per socket (the consumer's
  :class:`Throttle`): a client that sends typing in a loop cannot crowd the group.

Time comes from an injectable :class:`~apps.engine.clock.Clock`, so tests move it themselves.
"""

from __future__ import annotations

from typing import Any

from apps.engine.clock import Clock

__all__ = ["Person", "Presence", "Throttle"]

Person = dict[str, Any]  # {"id": int, "name": str}, and the room's "conversation_id"


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


class Presence:
    """Who watches one group as this process knows it: ``local`` (a socket's channel name ->
    its person) and ``remote`` (another process's channel -> the people it listed)."""

    def __init__(self) -> None:
        self.local: dict[str, Person] = {}
        self.remote: dict[str, list[Person]] = {}

    def mine(self) -> list[Person]:
        """This process's people, each once (a person with two tabs is one)."""
        return _unique(self.local.values())

    def everyone(self) -> list[Person]:
        """Everyone watching, each once, by name."""
        people = _unique([*self.local.values(),
                          *(person for listed in self.remote.values() for person in listed)])
        return sorted(people, key=lambda person: person["name"])

    def heard(self, channel: str, people: list[Person]) -> bool:
        """Another process listed its people (none: it left). Returns whether that changed
        what this process knows."""
        before = self.remote.get(channel)
        if people:
            self.remote[channel] = people
        else:
            self.remote.pop(channel, None)
        return before != (people or None)


def _unique(people: Any) -> list[Person]:
    """Each distinct person dict once, in the order first seen."""
    seen: dict[tuple[Any, ...], Person] = {}
    for person in people:
        seen.setdefault(tuple(sorted(person.items())), person)
    return list(seen.values())
