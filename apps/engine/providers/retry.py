"""Retries with a backoff ladder, for any provider (DESIGN 2.3).

A call is retried only while nothing has reached the caller: once a content event has been
yielded, a retry would make the model say things twice, so the error propagates instead.
``MessageStart`` is bookkeeping, not content: it is held back until the first content event, so
an error right after it (Anthropic's in-stream ``overloaded_error``) is still retried.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing

from apps.engine.errors import ProviderError
from apps.engine.events import ChatStreamEvent, MessageStart, Retrying
from apps.engine.messages import ChatRequest
from apps.engine.providers.base import AiProvider, ModelInfo

__all__ = ["LADDER_S", "RetryingProvider", "backoff_s"]

LADDER_S: tuple[float, ...] = (3.0, 10.0, 30.0, 60.0, 120.0)
"""Waits in seconds before retries 1..5."""


def backoff_s(ladder: Sequence[float], retry: int, *, jitter: float = 0.25,
              rng: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry number ``retry`` (0-based): the ladder's step (its last
    step once past its end) times 1 ± ``jitter``, so many clients failing together do not
    return together; ``rng`` returns a float in [0, 1)."""
    base = ladder[min(retry, len(ladder) - 1)]
    return base * (1.0 + jitter * (2.0 * rng() - 1.0))


class RetryingProvider:
    """Wrap ``inner``; retry retryable ProviderErrors raised before the first content event.

    - waits follow ``ladder`` (seconds) with ``jitter`` (±25 % by default), so many clients
      failing together do not return together;
    - a ``Retry-After`` the provider sent (``ProviderError.retry_after_s``) replaces the ladder
      step, clamped to ``max_retry_after_s`` so a hostile value cannot park a run for hours;
    - each wait is announced first with a :class:`Retrying` event (attempt k of len(ladder));
    - non-retryable kinds (auth, invalid_request, context_length_exceeded, ...) raise at once.

    ``sleep`` and ``rng`` (returns a float in [0, 1)) are injectable for tests.
    """

    def __init__(
        self,
        inner: AiProvider,
        *,
        ladder: Sequence[float] = LADDER_S,
        jitter: float = 0.25,
        max_retry_after_s: float = 120.0,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.protocol = inner.protocol
        self._ladder = tuple(ladder)
        self._jitter = jitter
        self._max_retry_after_s = max_retry_after_s
        self._sleep = sleep
        self._rng = rng

    def delay_for(self, retry: int, error: ProviderError) -> float:
        """Seconds to wait before retry number ``retry`` (0-based) after ``error``."""
        if error.retry_after_s is not None:
            return min(max(error.retry_after_s, 0.0), self._max_retry_after_s)
        return backoff_s(self._ladder, retry, jitter=self._jitter, rng=self._rng)

    async def stream_chat(self, request: ChatRequest) -> AsyncIterator[ChatStreamEvent]:
        """The inner stream, retried as the class says; raises the last ProviderError."""
        retry = 0
        while True:
            held: list[ChatStreamEvent] = []
            committed = False
            try:
                # aclosing: a consumer that stops early closes the inner HTTP stream now,
                # not whenever the garbage collector finalizes it.
                async with aclosing(self.inner.stream_chat(request)) as stream:
                    async for event in stream:
                        if not committed:
                            if isinstance(event, MessageStart):
                                held.append(event)
                                continue
                            committed = True
                            for early in held:
                                yield early
                        yield event
            except ProviderError as error:
                if committed or not error.retryable or retry >= len(self._ladder):
                    raise
                delay = self.delay_for(retry, error)
                retry += 1
                yield Retrying(attempt=retry, max_attempts=len(self._ladder), delay_s=delay,
                               kind=str(error.kind), message=error.message)
                await self._sleep(delay)
                continue
            if not committed:
                for early in held:
                    yield early
            return

    async def list_models(self) -> list[ModelInfo]:
        """The inner provider's models."""
        return await self.inner.list_models()

    async def aclose(self) -> None:
        """Close the inner provider."""
        await self.inner.aclose()
