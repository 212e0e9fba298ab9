"""A clock the test moves: a :class:`apps.engine.clock.Clock` whose sleepers wake only when
:meth:`FakeClock.advance` passes their time, so timing rules are tested without sleeping."""

from __future__ import annotations

import asyncio
import math

__all__ = ["FakeClock"]


class FakeClock:
    """Starts at ``start`` seconds and stays there until :meth:`advance`."""

    def __init__(self, start: float = 1_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []
        self._new_sleeper: asyncio.Event | None = None

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        entry = (self._now + seconds, asyncio.get_running_loop().create_future())
        self._sleepers.append(entry)
        if self._new_sleeper is not None:
            self._new_sleeper.set()
        try:
            await entry[1]
        finally:
            self._sleepers.remove(entry)

    def advance(self, seconds: float) -> None:
        """Move time on by ``seconds`` and wake every sleeper whose time has come."""
        self._now += seconds
        for due, waiter in list(self._sleepers):
            if due <= self._now and not waiter.done():
                waiter.set_result(None)

    async def sleeper(self, due: float, timeout_s: float = 10.0) -> None:
        """Return once some task sleeps until ``due`` (so advancing to it wakes that task);
        AssertionError when none does within ``timeout_s`` real seconds."""
        try:
            async with asyncio.timeout(timeout_s):
                while not any(math.isclose(d, due) for d, _ in self._sleepers):
                    self._new_sleeper = asyncio.Event()
                    await self._new_sleeper.wait()
        except TimeoutError:
            raise AssertionError(f"nothing sleeps until {due} on the fake clock") from None
