"""RetryingProvider: retries before the first content event only, on the 3/10/30/60/120 s ladder
with ±25 % jitter, honouring Retry-After; an injected sleep records the waits (no real waiting)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import ContentDelta, MessageEnd, MessageStart, Retrying
from apps.engine.messages import ChatRequest, Message
from apps.engine.providers.base import ModelInfo
from apps.engine.providers.classify import classify_error
from apps.engine.providers.retry import LADDER_S, RetryingProvider

REQUEST = ChatRequest(model="m", messages=[Message(role="user", content="hi")])
OK = [MessageStart(id="msg", model="m"), ContentDelta(text="hello"), MessageEnd()]


class AttemptsProvider:
    """Plays one script per call: events, optionally ending in an exception."""

    protocol = "anthropic"

    def __init__(self, *attempts: list[object]) -> None:
        self.attempts = list(attempts)
        self.calls = 0
        self.closed_streams = 0

    async def stream_chat(self, request: ChatRequest) -> AsyncIterator[object]:
        script = self.attempts[self.calls]
        self.calls += 1
        try:
            for item in script:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.closed_streams += 1

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo(id="m")]

    async def aclose(self) -> None:
        pass


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def overloaded(**kw: object) -> ProviderError:
    return ProviderError(ErrorKind.OVERLOADED, "Overloaded", **kw)  # type: ignore[arg-type]


async def collect(provider: RetryingProvider) -> list[object]:
    return [event async for event in provider.stream_chat(REQUEST)]


def retrying(inner: AttemptsProvider, sleeps: Sleeps, rng: float = 0.5) -> RetryingProvider:
    return RetryingProvider(inner, sleep=sleeps, rng=lambda: rng)


async def test_retryable_error_before_output_is_retried_with_a_visible_notice() -> None:
    inner = AttemptsProvider([overloaded(status=529)], OK)
    sleeps = Sleeps()
    events = await collect(retrying(inner, sleeps))
    assert events[0] == Retrying(attempt=1, max_attempts=5, delay_s=3.0, kind="overloaded",
                                 message="Overloaded")
    assert events[1:] == OK
    assert sleeps.waits == [3.0]
    assert inner.calls == 2


async def test_the_ladder_is_3_10_30_60_120_then_the_error_propagates() -> None:
    inner = AttemptsProvider(*[[overloaded()] for _ in range(6)])
    sleeps = Sleeps()
    with pytest.raises(ProviderError) as raised:
        await collect(retrying(inner, sleeps))
    assert raised.value.kind is ErrorKind.OVERLOADED
    assert sleeps.waits == list(LADDER_S) == [3.0, 10.0, 30.0, 60.0, 120.0]
    assert inner.calls == 6


@pytest.mark.parametrize(("rng", "factor"), [(0.0, 0.75), (0.999999, 1.25), (0.25, 0.875)])
async def test_jitter_stays_within_a_quarter_of_the_step(rng: float, factor: float) -> None:
    inner = AttemptsProvider([overloaded()], [overloaded()], OK)
    sleeps = Sleeps()
    await collect(retrying(inner, sleeps, rng=rng))
    assert sleeps.waits == pytest.approx([3.0 * factor, 10.0 * factor], rel=1e-5)


async def test_retry_after_seconds_replaces_the_ladder_step() -> None:
    # shared/cases/provider/059 A: next attempt no earlier than 7 s later.
    error = classify_error(
        b'{"type":"error","error":{"type":"rate_limit_error","message":"limit"}}',
        provider="anthropic", status=429, headers={"retry-after": "7"},
    )
    sleeps = Sleeps()
    await collect(retrying(AttemptsProvider([error], OK), sleeps))
    assert sleeps.waits == [7.0]


async def test_retry_after_http_date_is_honoured() -> None:
    # 059 C: clock fixed at Wed, 21 Oct 2026 07:27:50 GMT; the header says 07:28:00.
    now = 1792567670.0
    error = classify_error(b'{"type":"error","error":{"type":"rate_limit_error","message":"x"}}',
                           provider="anthropic", status=429,
                           headers={"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, now=now)
    assert error.retry_after_s == pytest.approx(10.0)
    sleeps = Sleeps()
    await collect(retrying(AttemptsProvider([error], OK), sleeps))
    assert sleeps.waits == [pytest.approx(10.0)]


async def test_hostile_retry_after_is_clamped() -> None:
    # 059 D: retry-after: 99999999 must never park a run for years.
    error = classify_error(b"{}", provider="anthropic", status=429,
                           headers={"retry-after": "99999999"})
    assert error.retry_after_s == 99999999.0  # the classifier reports, the retry layer clamps
    sleeps = Sleeps()
    await collect(RetryingProvider(AttemptsProvider([error], OK), sleep=sleeps,
                                   max_retry_after_s=60.0))
    assert sleeps.waits == [60.0]


@pytest.mark.parametrize("kind", [ErrorKind.AUTH, ErrorKind.INVALID_REQUEST,
                                  ErrorKind.CONTEXT_LENGTH_EXCEEDED, ErrorKind.CONTENT_BLOCKED,
                                  ErrorKind.PERMISSION, ErrorKind.NOT_FOUND])
async def test_non_retryable_kinds_raise_at_once(kind: ErrorKind) -> None:
    inner = AttemptsProvider([ProviderError(kind, "no")], OK)
    sleeps = Sleeps()
    with pytest.raises(ProviderError):
        await collect(retrying(inner, sleeps))
    assert inner.calls == 1 and sleeps.waits == []


async def test_error_after_content_is_never_retried() -> None:
    inner = AttemptsProvider([MessageStart(), ContentDelta(text="Here is"),
                              ProviderError(ErrorKind.OVERLOADED, "Overloaded", in_stream=True)],
                             OK)
    sleeps = Sleeps()
    seen: list[object] = []
    with pytest.raises(ProviderError):
        async for event in retrying(inner, sleeps).stream_chat(REQUEST):
            seen.append(event)
    assert seen == [MessageStart(), ContentDelta(text="Here is")]
    assert inner.calls == 1 and sleeps.waits == []


async def test_error_right_after_message_start_is_retried_without_a_stale_start() -> None:
    # Anthropic sends message_start, then event: error (shared/cases/provider/011 shape).
    inner = AttemptsProvider([MessageStart(id="first"), overloaded(in_stream=True)], OK)
    events = await collect(retrying(inner, Sleeps()))
    starts = [e for e in events if isinstance(e, MessageStart)]
    assert starts == [MessageStart(id="msg", model="m")]


async def test_a_stream_with_only_a_start_still_delivers_it() -> None:
    inner = AttemptsProvider([MessageStart(id="only")])
    assert await collect(retrying(inner, Sleeps())) == [MessageStart(id="only")]


async def test_closing_the_consumer_early_closes_the_inner_stream() -> None:
    inner = AttemptsProvider(OK)
    stream = retrying(inner, Sleeps()).stream_chat(REQUEST)
    assert isinstance(await anext(stream), MessageStart)
    await stream.aclose()
    assert inner.closed_streams == 1


async def test_list_models_and_protocol_pass_through() -> None:
    wrapped = retrying(AttemptsProvider(), Sleeps())
    assert wrapped.protocol == "anthropic"
    assert await wrapped.list_models() == [ModelInfo(id="m")]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e309", "soon"])
def test_a_retry_after_that_is_not_a_finite_number_is_ignored(value: str) -> None:
    error = classify_error(b"{}", provider="openai", status=429, headers={"retry-after": value})
    assert error.retry_after_s is None and error.kind is ErrorKind.RATE_LIMITED
