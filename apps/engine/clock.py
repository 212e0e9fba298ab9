"""The time code that waits reads: a clock a test can replace with one it advances itself, so
timing rules are tested without sleeping (tests/README of openai-agents-python)."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

__all__ = ["MONOTONIC", "Clock", "MonotonicClock"]


class Clock(Protocol):
    """Monotonic seconds and a sleep that follows them."""

    def now(self) -> float:
        """Seconds since an arbitrary start; never goes back."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once ``seconds`` have passed on this clock (at once when <= 0)."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


MONOTONIC = MonotonicClock()
