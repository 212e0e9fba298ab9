"""The compaction breaker is a cooldown, never for good (DESIGN 2.6, issue 14): after three
consecutive failures automatic compaction pauses, then tries again; a member's "compact now"
(a compact-only run) tries at any time. Time comes from an injectable clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from apps.engine.compaction.auto_compact import CompactionState, Compactor
from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import RunEnded
from apps.engine.providers.scripted import ScriptedProvider
from apps.engine.runtime.runner import RunConfig
from tests.unit.engine.runtime_kit import kinds, runner, text_turn
from tests.unit.engine.test_runner import long_history, summary_turn

COOLDOWN = timedelta(minutes=10)
SUMMARY_FAILS = [ProviderError(ErrorKind.SERVER, "summary failed")]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def over_the_threshold(tmp_path: Path, state: CompactionState, clock: Clock,
                             summary: list[object]) -> tuple[ScriptedProvider, list]:
    """One run whose answer puts the history over the threshold; ``summary``: how the
    summary call goes. The provider and the compaction events."""
    provider = ScriptedProvider([text_turn("answer", input_tokens=20_000), summary])
    compactor = Compactor(provider, "scripted", context_window=30_000, max_output=1_000,
                          state=state, cooldown_s=COOLDOWN.total_seconds(), clock=clock)
    events = await runner(provider, [], long_history(10), tmp_path, compactor=compactor,
                          config=RunConfig(model="scripted", context_window=30_000)).run()
    return provider, [e for e in events if e.kind in ("compaction_failed", "compacted")]


async def test_three_failures_pause_compaction_for_the_cooldown_then_it_tries_again(
        tmp_path: Path) -> None:
    state, clock = CompactionState(), Clock()
    for failures in (1, 2, 3):
        _, [failed] = await over_the_threshold(tmp_path, state, clock, SUMMARY_FAILS)
        assert failed.consecutive_failures == failures
        assert failed.paused_until == (clock.now + COOLDOWN if failures == 3 else None)
    clock.now += COOLDOWN - timedelta(seconds=1)
    provider, seen = await over_the_threshold(tmp_path, state, clock, summary_turn())
    assert seen == [] and len(provider.requests) == 1  # paused: no summary call
    clock.now += timedelta(seconds=2)
    _, [failed] = await over_the_threshold(tmp_path, state, clock, SUMMARY_FAILS)
    assert failed.consecutive_failures == 4 and failed.paused_until == clock.now + COOLDOWN
    clock.now += COOLDOWN
    _, [compacted] = await over_the_threshold(tmp_path, state, clock, summary_turn())
    assert compacted.kind == "compacted" and state == CompactionState()


async def test_a_reactive_compaction_waits_for_the_cooldown_too(tmp_path: Path) -> None:
    clock = Clock()
    state = CompactionState(consecutive_failures=3, paused_until=clock.now + COOLDOWN)
    too_long = ProviderError(ErrorKind.CONTEXT_LENGTH_EXCEEDED, "prompt is too long")
    provider = ScriptedProvider([[too_long], summary_turn()])
    compactor = Compactor(provider, "scripted", context_window=200_000, max_output=8_000,
                          state=state, clock=clock)
    events = await runner(provider, [], long_history(3), tmp_path, compactor=compactor).run()
    assert "compaction_started" not in kinds(events) and len(provider.requests) == 1
    assert events[-1].error_kind == "context_length_exceeded"


async def test_compact_now_compacts_while_paused_and_closes_the_breaker(tmp_path: Path) -> None:
    clock = Clock()
    state = CompactionState(consecutive_failures=5, paused_until=clock.now + COOLDOWN)
    provider = ScriptedProvider([summary_turn()])
    history = long_history(3)
    compactor = Compactor(provider, "scripted", context_window=200_000, max_output=8_000,
                          state=state, clock=clock)
    events = await runner(provider, [], history, tmp_path, compactor=compactor).run(
        compact_only=True)
    assert kinds(events) == ["run_started", "compaction_started", "compacted", "run_ended"]
    assert events[1].reason == "manual" and events[-1].status == "completed"
    assert len(provider.requests) == 1  # the summary; no model turn
    assert history[0].text().startswith("[Summary of the earlier conversation")
    assert state == CompactionState()


async def test_a_failed_compact_now_fails_its_run_and_counts(tmp_path: Path) -> None:
    clock = Clock()
    state = CompactionState(consecutive_failures=2)
    compactor = Compactor(ScriptedProvider([SUMMARY_FAILS]), "scripted",
                          context_window=200_000, max_output=8_000, state=state, clock=clock)
    events = await runner(compactor.provider, [], long_history(3), tmp_path,
                          compactor=compactor).run(compact_only=True)
    failed = next(e for e in events if e.kind == "compaction_failed")
    assert failed.consecutive_failures == 3 and failed.paused_until == clock.now + COOLDOWN
    assert events[-1] == RunEnded(status="failed", error_kind="compaction_failed", turns=0)
