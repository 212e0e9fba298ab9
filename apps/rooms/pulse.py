"""The run worker's pulse: one set of timers for all the runs it hosts (issue 20: capacity).

Each hosted run needs three things on a clock: its projector ticked :data:`TICKS_PER_WINDOW`
times per ``COALESCE_MS`` (deltas are flushed at the first tick after they waited their window,
so the flushes of every run due at a tick share one write of the log writer; a delta waits at
most a third of the window longer, about a 60 Hz frame at the default 50 ms), its
conversation's high-water mark sent every ``HWM_INTERVAL_S``
(:mod:`apps.rooms.tail`), and its heartbeat written every ``HEARTBEAT_S`` (the sweeper takes
over a run whose heartbeat is stale). Three tasks per run made 64 runs wake the loop some 1,300
times a second, with a thread hop and a query per mark and per heartbeat; here one task per
timer serves every run: a tick checks each projector without awaiting it and flushes only the
due ones (each in its own task, so a slow flush holds back nobody else's), a mark reads every
conversation's last ``seq`` in one query and sends the marks in one batch
(:func:`~apps.rooms.tail.hwm_publish_all`), a beat is one UPDATE for every run. A run's last
mark, one to two intervals after its end, joins the same pass (:meth:`Pulse.mark_after_end`)
instead of a query of its own. A timer's task starts with its first run and is cancelled with
its last (the marks' with the last mark after an end), so an idle worker sleeps.

One pulse per event loop (:func:`pulse`): the worker's, and each test's.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from channels.db import database_sync_to_async
from django.conf import settings

from apps.engine.clock import MONOTONIC, Clock
from apps.rooms.projector import Projector
from apps.rooms.services.runs import runs_heartbeat
from apps.rooms.tail import hwm_publish_all

__all__ = ["TICKS_PER_WINDOW", "Pulse", "pulse"]

logger = logging.getLogger(__name__)

TICKS_PER_WINDOW = 3
"""Projector ticks per ``COALESCE_MS``: more ticks, less waiting past the window, more writes
(bench_fanout at 64 × 5, 2 / 3 / 5 ticks: worker 132 / 134 / 147 µs per token, p50 48.5 /
45.0 / 42.7 ms)."""


class _Timer:
    """One task, from ``start`` to ``stop``, calling ``fire`` every ``interval()`` seconds
    (read anew each time: settings may change in tests); ``sleep`` is the clock's."""

    def __init__(self, name: str, interval: Callable[[], float],
                 fire: Callable[[], Awaitable[None]], sleep: Callable[[float], Awaitable[None]]
                 ) -> None:
        self.name = name
        self.interval = interval
        self.fire = fire
        self.sleep = sleep
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.task is None or self.task.done():  # done: ended by something not stop()
            self.task = asyncio.create_task(self._run(), name=f"pulse:{self.name}")

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    async def _run(self) -> None:
        while True:  # sleep first: a run's claim stamped its heartbeat, its log has no news
            await self.sleep(self.interval())
            try:
                await self.fire()
            except Exception:  # one lost mark or beat: the next one, or the sweeper, repairs
                logger.exception("the worker's %s failed", self.name)


class Pulse:
    """The timers of one event loop's hosted runs. ``beating(run_id)`` keeps a run's
    heartbeat going while the block runs; ``watching(projector)`` ticks its projector and
    sends its conversation's marks. ``clock`` times the marks (tests give theirs); ticks and
    heartbeats use real time, as the projector's coalescing does."""

    def __init__(self, clock: Clock = MONOTONIC) -> None:
        self._runs: Counter[int] = Counter()
        self._projectors: set[Projector] = set()
        self._flushes: dict[Projector, asyncio.Task[None]] = {}  # also keeps the tasks alive
        self._conversations: Counter[int] = Counter()
        self._after_end: dict[int, float] = {}  # conversation: clock time its last mark is due
        self._clock = clock
        self._beat = _Timer("heartbeat", _seconds("HEARTBEAT_S"), self._beat_all, asyncio.sleep)
        self._tick = _Timer("tick", _seconds("COALESCE_MS", 0.001 / TICKS_PER_WINDOW),
                            self._tick_all, asyncio.sleep)
        self._mark = _Timer("high-water mark", _seconds("HWM_INTERVAL_S"), self._mark_all,
                            clock.sleep)

    @contextmanager
    def beating(self, run_id: int) -> Iterator[None]:
        """The run's heartbeat is written every ``HEARTBEAT_S`` until the block ends."""
        self._runs[run_id] += 1
        self._beat.start()
        try:
            yield
        finally:
            _forget(self._runs, run_id)
            if not self._runs:
                self._beat.stop()

    @contextmanager
    def watching(self, projector: Projector) -> Iterator[None]:
        """The projector is ticked, and its conversation's mark sent, until the block ends."""
        self._projectors.add(projector)
        self._conversations[projector.conversation_id] += 1
        self._tick.start()
        self._mark.start()
        try:
            yield
        finally:
            self._projectors.discard(projector)
            _forget(self._conversations, projector.conversation_id)
            if not self._projectors:
                self._tick.stop()
                if not self._after_end:
                    self._mark.stop()

    def mark_after_end(self, conversation_id: int) -> None:
        """Send the conversation's mark once more in the first pass at least
        ``HWM_INTERVAL_S`` from now: its run has ended, and the run's last events, with the
        marks sent with them, may have met the same full inboxes (:mod:`apps.rooms.tail`)."""
        self._after_end[conversation_id] = (self._clock.now()
                                            + settings.CONFAB["HWM_INTERVAL_S"])
        self._mark.start()

    async def _beat_all(self) -> None:
        await database_sync_to_async(runs_heartbeat)(list(self._runs))

    async def _tick_all(self) -> None:
        for projector in self._projectors:
            if projector not in self._flushes and projector.tick_due():
                self._flushes[projector] = asyncio.create_task(self._flush(projector))

    async def _flush(self, projector: Projector) -> None:
        try:
            await projector.tick()
        except Exception:  # raised again to the run by its next event: the run ends
            logger.exception("run %s: a coalescing flush failed", projector.run_id)
        finally:
            del self._flushes[projector]

    async def _mark_all(self) -> None:
        now = self._clock.now()
        due = [c for c, at in self._after_end.items() if at <= now]
        for conversation_id in due:
            del self._after_end[conversation_id]
        await hwm_publish_all(list(self._conversations.keys() | due))
        if not self._conversations and not self._after_end:
            self._mark.stop()  # the last mark after an end: the task ends at its next sleep


def _seconds(name: str, unit: float = 1.0) -> Callable[[], float]:
    """The setting ``CONFAB[name]`` in seconds (``unit``: seconds per its unit), read at each
    call."""
    return lambda: settings.CONFAB[name] * unit


def _forget(counts: Counter[int], key: int) -> None:
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]


_pulses: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pulse] = (
    weakref.WeakKeyDictionary())


def pulse(clock: Clock = MONOTONIC) -> Pulse:
    """The running event loop's pulse, made on first use with ``clock``."""
    loop = asyncio.get_running_loop()
    found = _pulses.get(loop)
    if found is None:
        found = _pulses[loop] = Pulse(clock)
    return found
