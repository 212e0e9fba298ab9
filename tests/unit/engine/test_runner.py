"""The ReAct loop with the scripted provider: event order, history shape, steering, stopping,
breakers and compaction."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from apps.engine.compaction.auto_compact import Compactor
from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.events import (
    RUNTIME_EVENT,
    ChatStreamEvent,
    ContentDelta,
    MessageEnd,
    MessageEnded,
    MessageStart,
    RunEnded,
    RuntimeEvent,
    TextDelta,
    ToolCallReady,
    ToolCallStart,
)
from apps.engine.messages import ChatRequest, Message, ToolCall, Usage
from apps.engine.ports import ApprovalDecision
from apps.engine.providers.retry import RetryingProvider
from apps.engine.providers.scripted import OFFLINE_REPLY, ScriptedProvider
from apps.engine.runtime.runner import RunConfig
from tests.unit.engine.runtime_kit import (
    Approvals,
    Blocker,
    Echo,
    Inbox,
    assert_every_call_answered,
    call_turn,
    kinds,
    runner,
    text_turn,
    user,
)


async def test_a_text_answer_runs_one_turn(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_turn("Hello", " world")])
    history = [user("hi")]
    events = await runner(provider, [], history, tmp_path).run()
    assert kinds(events) == ["run_started", "turn_started", "message_started", "text_delta",
                             "text_delta", "message_ended", "usage", "turn_ended", "run_ended"]
    assert events[-1] == RunEnded(status="completed", turns=1)
    assert [m.role for m in history] == ["user", "assistant"]
    assert history[-1].text() == "Hello world"


class Paced:
    """A provider whose stream lets the event loop turn before each of its events, as a
    socket's does (ScriptedProvider streams a turn without one)."""

    protocol = "anthropic"

    def __init__(self, *pieces: str) -> None:
        self.pieces = pieces

    async def stream_chat(self, request: ChatRequest) -> AsyncIterator[ChatStreamEvent]:
        for item in text_turn(*self.pieces):
            await asyncio.sleep(0)
            yield item

    async def list_models(self) -> list[Any]:
        return []

    async def aclose(self) -> None:
        pass


def shown(events: list[RuntimeEvent]) -> list[tuple[str, str | None]]:
    return [(e.kind, getattr(e, "text", None)) for e in events]


async def test_take_now_takes_the_events_it_accepts_in_their_place(tmp_path: Path) -> None:
    # Issue 20: the room's projector takes most deltas at once instead of through the queue
    # to the host's task; what it takes and what is yielded make the same stream, in order.
    plain = await runner(Paced("a", "b", "c", "d"), [], [user("hi")], tmp_path).run()
    stream: list[RuntimeEvent] = []
    taken: list[str] = []

    def take_now(event: RuntimeEvent) -> bool:
        if isinstance(event, TextDelta) and event.text != "a":
            stream.append(event)
            taken.append(event.text)
            return True
        return False

    run = runner(Paced("a", "b", "c", "d"), [], [user("hi")], tmp_path)
    async for event in run.events(take_now=take_now):
        stream.append(event)
    assert taken == ["b", "c", "d"]
    assert shown(stream) == shown(plain)


async def test_take_now_is_offered_an_event_only_once_every_earlier_one_was_yielded(
        tmp_path: Path) -> None:
    # An event emitted while others wait in the queue would overtake them if taken.
    yielded: list[RuntimeEvent] = []
    offers: list[tuple[RuntimeEvent, int]] = []

    def refuse(event: RuntimeEvent) -> bool:
        offers.append((event, len(yielded)))
        return False

    run = runner(Paced("a", "b", "c"), [], [user("hi")], tmp_path)
    async for event in run.events(take_now=refuse):
        yielded.append(event)
    places = [next(i for i, e in enumerate(yielded) if e is event) for event, _ in offers]
    assert places == [before for _, before in offers]
    # message_started and the first delta are emitted together: the delta was not offered
    assert 0 < len(offers) < len(yielded)
    assert [e.kind for e, _ in offers].count("text_delta") == 2


async def test_a_tool_round_trip(tmp_path: Path) -> None:
    echo = Echo()
    provider = ScriptedProvider([call_turn(("Echo", {"text": "ping"})), text_turn("done")])
    history = [user("go")]
    events = await runner(provider, [echo], history, tmp_path).run()
    assert echo.calls == ["ping"]
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[2].content[0].content == "echo: ping"
    second = provider.requests[1].messages
    assert second[-1].role == "tool" and second[-2].tool_calls()[0].name == "Echo"
    assert events[-1].status == "completed" and events[-1].turns == 2
    assert "tool_result" in kinds(events)


async def test_a_tool_starts_before_the_provider_stream_has_ended(tmp_path: Path) -> None:
    blocker = Blocker()
    journal: list[str] = []
    call = ToolCall(id="c1", name="Blocker", arguments={}, index=0)
    turn = [MessageStart(), ToolCallStart(index=0, id="c1", name="Blocker"),
            ToolCallReady(call=call),
            blocker.started,  # the stream waits here until the tool has started
            lambda: journal.append("stream goes on"),
            ContentDelta(text="after"), MessageEnd(stop_reason="tool_use")]
    provider = ScriptedProvider([turn, text_turn("ok")])

    async def release_later() -> None:
        await blocker.started.wait()
        journal.append("tool started")
        blocker.release.set()

    helper = asyncio.create_task(release_later())
    async with asyncio.timeout(10):  # a deadlock guard, not a measurement
        await runner(provider, [blocker], [user("go")], tmp_path).run()
    await helper
    assert journal == ["tool started", "stream goes on"]


async def test_a_message_injected_mid_stream_neither_loses_nor_duplicates_the_reply(
        tmp_path: Path) -> None:
    pause = asyncio.Event()
    provider = ScriptedProvider([text_turn("Hello", " wor", "ld", pause=pause, at=2),
                                 text_turn("Hi bob")])
    inbox = Inbox()
    history = [user("hi")]
    run = runner(provider, [], history, tmp_path, inbox=inbox)
    events = []
    async for event in run.events():
        events.append(event)
        if isinstance(event, TextDelta) and event.text == " wor":
            inbox.post("bob", "me too")
            pause.set()
    assert [(m.role, m.text()) for m in history] == [
        ("user", "hi"), ("assistant", "Hello world"), ("user", "me too"), ("assistant", "Hi bob")]
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == "Hello worldHi bob"
    assert history[2].author.name == "bob"
    assert kinds(events).count("messages_injected") == 1


async def test_pending_messages_join_after_tool_results_in_arrival_order(tmp_path: Path) -> None:
    blocker = Blocker()
    inbox = Inbox()
    provider = ScriptedProvider([call_turn(("Blocker", {})), text_turn("answering both")])
    history = [user("start")]
    run = runner(provider, [blocker], history, tmp_path, inbox=inbox)

    async def steer() -> None:
        await blocker.started.wait()
        inbox.post("alice", "first")
        inbox.post("bob", "second")
        blocker.release.set()

    helper = asyncio.create_task(steer())
    await run.run()
    await helper
    assert [m.role for m in history] == ["user", "assistant", "tool", "user", "user",
                                         "assistant"]
    assert [(m.author.name, m.text()) for m in history[3:5]] == [("alice", "first"),
                                                                ("bob", "second")]
    sent = provider.requests[1].messages
    assert [b.text for b in sent[3].content] == ["[alice]", "first"]
    assert [b.text for b in sent[4].content] == ["[bob]", "second"]


async def test_injected_messages_keep_a_finished_run_going(tmp_path: Path) -> None:
    inbox = Inbox()
    pause = asyncio.Event()
    provider = ScriptedProvider([text_turn("one", pause=pause), text_turn("two")])
    run = runner(provider, [], [user("hi")], tmp_path, inbox=inbox)
    events = []
    async for event in run.events():
        events.append(event)
        if isinstance(event, TextDelta) and event.text == "one":
            inbox.post("bob", "and?")
            pause.set()
    assert events[-1].turns == 2 and events[-1].status == "completed"


async def test_chat_that_does_not_steer_joins_the_history_but_ends_the_run(
        tmp_path: Path) -> None:
    inbox = Inbox()
    pause = asyncio.Event()
    provider = ScriptedProvider([text_turn("one", pause=pause), text_turn("never asked")])
    history = [user("hi")]
    run = runner(provider, [], history, tmp_path, inbox=inbox)
    events = []
    async for event in run.events():
        events.append(event)
        if isinstance(event, TextDelta) and event.text == "one":
            inbox.post("bob", "lunch at noon?", steer=False)
            pause.set()
    assert events[-1].turns == 1 and events[-1].status == "completed"
    assert [(m.role, m.text()) for m in history] == [
        ("user", "hi"), ("assistant", "one"), ("user", "lunch at noon?")]
    assert len(provider.requests) == 1


async def test_chat_sent_during_a_tool_step_is_in_the_next_model_call(tmp_path: Path) -> None:
    blocker = Blocker()
    inbox = Inbox()
    provider = ScriptedProvider([call_turn(("Blocker", {})), text_turn("done")])
    history = [user("start")]
    run = runner(provider, [blocker], history, tmp_path, inbox=inbox)

    async def chat() -> None:
        await blocker.started.wait()
        inbox.post("bob", "fyi the build is red", steer=False)
        blocker.release.set()

    helper = asyncio.create_task(chat())
    await run.run()
    await helper
    sent = provider.requests[1].messages
    assert [b.text for b in sent[-1].content] == ["[bob]", "fyi the build is red"]


async def test_stop_while_streaming_keeps_the_partial_message_marked_cancelled(
        tmp_path: Path) -> None:
    pause = asyncio.Event()
    provider = ScriptedProvider([text_turn("Partial", " never", pause=pause, at=1)])
    history = [user("hi")]
    run = runner(provider, [], history, tmp_path)
    events = []
    async for event in run.events():
        events.append(event)
        if isinstance(event, TextDelta):
            run.cancel()
    assert events[-1] == RunEnded(status="cancelled", turns=1)
    ended = [e for e in events if isinstance(e, MessageEnded)]
    assert ended[-1].status == "cancelled" and ended[-1].message.text() == "Partial"
    assert history[-1].status == "cancelled" and history[-1].text() == "Partial"


async def test_stop_while_a_tool_runs_aborts_it_and_answers_every_call(tmp_path: Path) -> None:
    blocker = Blocker()
    echo = Echo()
    provider = ScriptedProvider([call_turn(("Echo", {"text": "a"}), ("Blocker", {}))])
    history = [user("go")]
    run = runner(provider, [echo, blocker], history, tmp_path)

    async def stop() -> None:
        await blocker.started.wait()
        run.cancel()

    helper = asyncio.create_task(stop())
    events = await run.run()
    await helper
    assert blocker.cancelled
    assert events[-1].status == "cancelled"
    assert [m.role for m in history] == ["user", "assistant", "tool"]
    results = history[-1].content
    assert results[0].content == "echo: a" and not results[0].is_error
    assert results[1].is_error and "cancelled" in results[1].text()
    assert_every_call_answered(history)


async def test_stop_while_waiting_for_approval(tmp_path: Path) -> None:
    blocker = Blocker()
    approvals = Approvals()
    provider = ScriptedProvider([call_turn(("Blocker", {}))])
    history = [user("go")]
    run = runner(provider, [blocker], history, tmp_path, approvals=approvals)

    async def stop() -> None:
        await approvals.asked.wait()
        run.cancel()

    helper = asyncio.create_task(stop())
    events = await run.run()
    await helper
    assert not blocker.started.is_set()
    assert "awaiting_approval" in kinds(events) and events[-1].status == "cancelled"
    assert_every_call_answered(history)


async def test_an_approved_call_runs_after_the_decision(tmp_path: Path) -> None:
    blocker = Blocker()
    blocker.release.set()
    approvals = Approvals()
    provider = ScriptedProvider([call_turn(("Blocker", {})), text_turn("ok")])
    run = runner(provider, [blocker], [user("go")], tmp_path, approvals=approvals)

    async def approve() -> None:
        await approvals.asked.wait()
        approvals.answer.set_result(ApprovalDecision(approved=True, decided_by="bob"))

    helper = asyncio.create_task(approve())
    events = await run.run()
    await helper
    assert blocker.started.is_set() and events[-1].status == "completed"
    order = kinds(events)
    assert order.index("awaiting_approval") < order.index("approval_decided") < order.index(
        "tool_started")


async def test_ten_all_failed_iterations_end_with_tool_loop_detected(tmp_path: Path) -> None:
    turns = [call_turn(("Missing", {}), tag=str(i)) for i in range(10)]
    provider = ScriptedProvider(turns)
    events = await runner(provider, [], [user("go")], tmp_path).run()
    assert events[-1] == RunEnded(status="failed", error_kind="tool_loop_detected", turns=10)
    assert len(provider.requests) == 10


async def test_a_success_resets_the_tool_loop_breaker(tmp_path: Path) -> None:
    turns = [call_turn(("Missing", {}), tag=str(i)) for i in range(9)]
    turns += [call_turn(("Echo", {"text": "x"}), tag="ok")]
    turns += [call_turn(("Missing", {}), tag=f"again{i}") for i in range(5)]
    turns += [text_turn("done")]
    events = await runner(ScriptedProvider(turns), [Echo()], [user("go")], tmp_path).run()
    assert events[-1].status == "completed"


async def test_the_iteration_cap_stops_the_run(tmp_path: Path) -> None:
    turns = [call_turn(("Echo", {"text": str(i)}), tag=str(i)) for i in range(3)]
    config = RunConfig(model="scripted", max_iterations=3)
    events = await runner(ScriptedProvider(turns), [Echo()], [user("go")], tmp_path,
                          config=config).run()
    assert events[-1] == RunEnded(status="failed", error_kind="max_iterations", turns=3)


async def test_a_provider_error_mid_stream_fails_the_run_and_keeps_what_was_said(
        tmp_path: Path) -> None:
    broken = [MessageStart(), ContentDelta(text="Here is"),
              ProviderError(ErrorKind.OVERLOADED, "Overloaded", in_stream=True)]
    history = [user("hi")]
    events = await runner(ScriptedProvider([broken]), [], history, tmp_path).run()
    assert events[-1] == RunEnded(status="failed", error_kind="overloaded", turns=1)
    assert events[-2].kind == "error" and events[-2].message == "Overloaded"
    assert history[-1].status == "error" and history[-1].text() == "Here is"


async def test_retry_notices_reach_the_room(tmp_path: Path) -> None:
    inner = ScriptedProvider([[ProviderError(ErrorKind.OVERLOADED, "Overloaded", status=529)],
                              text_turn("back")])
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    provider = RetryingProvider(inner, sleep=sleep, rng=lambda: 0.5)
    events = await runner(provider, [], [user("hi")], tmp_path).run()
    retry = next(e for e in events if e.kind == "retrying")
    assert (retry.attempt, retry.max_attempts, retry.delay_s) == (1, 5, 3.0)
    assert events[-1].status == "completed" and waits == [3.0]


async def test_without_turns_the_provider_plays_scripts_from_the_history(tmp_path: Path) -> None:
    script = {"script": [{"thinking": "hmm"}, {"tool_call": {"name": "Echo",
                                                             "arguments": {"text": "x"}}},
                         {"text": "all done"}]}
    history = [user(json.dumps(script))]
    echo = Echo()
    await runner(ScriptedProvider(), [echo], history, tmp_path).run()
    assert echo.calls == ["x"]
    assert history[-1].text() == "all done"
    assert history[1].content[0].type == "thinking"


async def test_without_a_script_the_offline_model_says_what_it_is(tmp_path: Path) -> None:
    history = [user("hello")]
    await runner(ScriptedProvider(), [], history, tmp_path).run()
    assert history[-1].text() == OFFLINE_REPLY


async def test_every_runtime_event_survives_json(tmp_path: Path) -> None:
    provider = ScriptedProvider([call_turn(("Echo", {"text": "x"})), text_turn("done")])
    for event in await runner(provider, [Echo()], [user("go")], tmp_path).run():
        as_json = json.loads(json.dumps(event.model_dump(mode="json")))
        assert RUNTIME_EVENT.validate_python(as_json) == event


# -- compaction ---------------------------------------------------------------------------------


def long_history(n: int) -> list[Message]:
    history: list[Message] = []
    for i in range(n):
        history.append(user(f"question {i} " + "x" * 4000))
        history.append(Message(role="assistant", content=f"answer {i} " + "y" * 4000))
    history.append(user("latest"))
    return history


def summary_turn(text: str = "They discussed many questions.") -> list[object]:
    return text_turn(text)


async def test_auto_compaction_summarizes_when_over_the_threshold(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_turn("answer", input_tokens=20_000), summary_turn()])
    history = long_history(10)
    config = RunConfig(model="scripted", context_window=30_000, max_tokens=1_000)
    compactor = Compactor(provider, "scripted", context_window=30_000, max_output=1_000)
    assert compactor.threshold == 16_000
    events = await runner(provider, [], history, tmp_path, config=config,
                          compactor=compactor).run()
    compacted = next(e for e in events if e.kind == "compacted")
    assert compacted.reason == "auto" and compacted.tokens_after < compacted.tokens_before
    assert history[0].text().startswith("[Summary of the earlier conversation")
    assert history[-1].text() == "answer" and history[-2].text() == "latest"
    assert len(history) == 1 + len(long_history(10)) + 1 - compacted.messages_removed
    summary_request = provider.requests[1]
    assert summary_request.tools == [] and "question 0" in summary_request.messages[0].text()


async def test_reactive_compaction_retries_the_call_once(tmp_path: Path) -> None:
    too_long = ProviderError(ErrorKind.CONTEXT_LENGTH_EXCEEDED, "prompt is too long")
    provider = ScriptedProvider([[too_long], summary_turn(), text_turn("fits now")])
    history = long_history(3)
    compactor = Compactor(provider, "scripted", context_window=200_000, max_output=8_000)
    events = await runner(provider, [], history, tmp_path, compactor=compactor).run()
    assert [e.reason for e in events if e.kind == "compacted"] == ["reactive"]
    assert events[-1].status == "completed" and history[-1].text() == "fits now"


async def test_a_second_context_error_after_compaction_fails_the_run(tmp_path: Path) -> None:
    too_long = ProviderError(ErrorKind.CONTEXT_LENGTH_EXCEEDED, "prompt is too long")
    provider = ScriptedProvider([[too_long], summary_turn(), [too_long]])
    compactor = Compactor(provider, "scripted", context_window=200_000, max_output=8_000)
    events = await runner(provider, [], long_history(3), tmp_path, compactor=compactor).run()
    assert events[-1] == RunEnded(status="failed", error_kind="context_length_exceeded",
                                  turns=1)


async def test_compaction_never_separates_a_call_from_its_result(tmp_path: Path) -> None:
    from apps.engine.compaction.auto_compact import split_point

    history = [user("a" * 400)]
    for i in range(6):
        history.append(Message(role="assistant", content=[
            {"type": "tool_use", "id": f"c{i}", "name": "Echo", "input": {}}]))
        history.append(Message(role="tool", content=[
            {"type": "tool_result", "tool_use_id": f"c{i}", "content": "r" * 400}]))
    for keep in (0, 50, 150, 300, 10_000):
        cut = split_point(history, keep)
        assert cut is not None and history[cut].role == "assistant"
        assert_every_call_answered(history[cut:])


@pytest.mark.parametrize("usage", [Usage(input_tokens=1000, output_tokens=50), None])
async def test_usage_reports_how_full_the_context_is(tmp_path: Path, usage: Usage | None
                                                     ) -> None:
    turn = [MessageStart(), ContentDelta(text="x"), MessageEnd(usage=usage or Usage())]
    config = RunConfig(model="scripted", context_window=100_000)
    events = await runner(ScriptedProvider([turn]), [], [user("hi")], tmp_path,
                          config=config).run()
    [gauge] = [e for e in events if e.kind == "usage"]
    assert gauge.context_window == 100_000
    if usage is None:
        assert gauge.context_tokens == (2 // 4 + 4) + (1 // 4 + 4)
    else:
        assert gauge.context_tokens == 1050


async def test_a_stop_before_the_run_begins_still_ends_it_cleanly(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_turn("never said")])
    history = [user("hi")]
    run = runner(provider, [], history, tmp_path)
    run.cancel()
    events = await run.run()
    assert [e.kind for e in events] == ["run_started", "run_ended"]
    assert events[-1].status == "cancelled" and provider.requests == []


async def test_a_stop_right_after_events_start_is_not_lost(tmp_path: Path) -> None:
    provider = ScriptedProvider([text_turn("said", " never", pause=asyncio.Event())])
    run = runner(provider, [], [user("hi")], tmp_path)
    stream = run.events()
    first = await anext(stream)
    run.cancel()
    rest = [e async for e in stream]
    assert first.kind == "run_started" and rest[-1].status == "cancelled"
