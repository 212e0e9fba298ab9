"""The projector's coalescing as the room sees it: a message's first delta goes out at once
(it is what says the agent started answering), with the message's start, the rest wait for the
window."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import Team, User
from apps.engine.events import (
    AwaitingInput,
    MessageEnded,
    MessageStarted,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
    TurnEnded,
    UsageUpdated,
)
from apps.engine.messages import Message as EngineMessage
from apps.engine.messages import Usage
from apps.rooms.drafts import CHECKPOINT_S, content_so_far
from apps.rooms.models import Conversation, ConversationEvent, Message, MessageStatus, Room, Run
from apps.rooms.ports import PendingMessages
from apps.rooms.projector import Projector
from apps.rooms.pulse import pulse
from tests.consumers.fake_clock import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def stored_deltas(conversation: Conversation) -> list[str]:
    return [e.payload["text"] for e in ConversationEvent.objects.filter(
        conversation=conversation, kind="text_delta").order_by("seq")]


@contextmanager
def recorded_hops(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The qualified names of the functions that hop to a thread (asgiref) in the block."""
    hops: list[str] = []
    call = SyncToAsync.__call__

    async def hop(self: SyncToAsync, *args: object, **kwargs: object) -> object:
        hops.append(getattr(self.func, "__qualname__", "?"))
        return await call(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", hop)
    try:
        yield hops
    finally:
        monkeypatch.setattr(SyncToAsync, "__call__", call)


async def projected(team: Team, user: User) -> tuple[Conversation, Run, Projector]:
    """A new conversation with a run and its projector; its window so long that nothing but
    a message's first delta and ``close`` flushes."""
    room = await Room.objects.acreate(team=team, name="General", created_by=user)
    conversation = await Conversation.objects.acreate(room=room, title="t", created_by=user)
    run = await Run.objects.acreate(conversation=conversation, started_by=user)
    return conversation, run, Projector(
        conversation.pk, run.pk, PendingMessages(conversation.pk, run.pk),
        coalesce_ms=60_000, coalesce_bytes=1 << 20)


async def test_the_first_delta_of_a_message_is_stored_at_once_and_the_rest_coalesce(
        acme: Team, alice: User) -> None:
    conversation, _, projector = await projected(acme, alice)
    for text in ("Hel", "lo", " room"):
        await projector.handle(TextDelta(message_id="m1", text=text))
    await projector.handle(TextDelta(message_id="m2", text="Next"))
    assert await stored_deltas(conversation) == ["Hel", "lo room", "Next"]
    await projector.close()



async def test_deltas_that_waited_their_window_leave_at_a_tick_not_with_the_next_delta(
        acme: Team, alice: User) -> None:
    # Issue 20: the pulse's tick flushes every run due at once (one write for all of them);
    # the delta that arrives after the window waits for it, unless the bytes are full.
    room = await Room.objects.acreate(team=acme, name="General", created_by=alice)
    conversation = await Conversation.objects.acreate(room=room, title="t", created_by=alice)
    run = await Run.objects.acreate(conversation=conversation, started_by=alice)
    clock = FakeClock()
    projector = Projector(conversation.pk, run.pk, PendingMessages(conversation.pk, run.pk),
                          coalesce_ms=50, coalesce_bytes=12, clock=clock)
    await projector.handle(TextDelta(message_id="m1", text="a"))  # the first: at once
    await projector.handle(TextDelta(message_id="m1", text="b"))
    clock.advance(0.06)
    await projector.handle(TextDelta(message_id="m1", text="c"))  # past the window: waits
    assert await stored_deltas(conversation) == ["a"]
    assert projector.tick_due()
    await projector.tick()
    assert await stored_deltas(conversation) == ["a", "bc"]
    assert not projector.tick_due()
    await projector.handle(TextDelta(message_id="m1", text="0123456789ab"))  # 12 bytes: full
    assert await stored_deltas(conversation) == ["a", "bc", "0123456789ab"]
    await projector.close()


async def test_take_now_takes_only_a_delta_that_handle_would_just_add(
        acme: Team, alice: User) -> None:
    # Issue 20: the runner offers its events to take_now before queueing them for the host's
    # task; it takes what handle would only have added to the waiting deltas, nothing else.
    room = await Room.objects.acreate(team=acme, name="General", created_by=alice)
    conversation = await Conversation.objects.acreate(room=room, title="t", created_by=alice)
    run = await Run.objects.acreate(conversation=conversation, started_by=alice)
    projector = Projector(conversation.pk, run.pk, PendingMessages(conversation.pk, run.pk),
                          coalesce_ms=60_000, coalesce_bytes=8)
    assert not projector.take_now(TextDelta(message_id="m1", text="Hel"))  # stored at once
    await projector.handle(TextDelta(message_id="m1", text="Hel"))
    assert projector.take_now(TextDelta(message_id="m1", text="lo"))
    assert projector.take_now(TextDelta(message_id="m1", text=" ro"))
    assert not projector.take_now(TextDelta(message_id="m1", text="oms"))  # fills 8 bytes
    assert not projector.take_now(TextDelta(message_id="m2", text="x"))  # another's first
    assert not projector.take_now(TurnEnded(turn=1))
    await projector.handle(TextDelta(message_id="m1", text="oms"))  # flushes the three
    assert await stored_deltas(conversation) == ["Hel", "lo rooms"]
    # while handle stores an event (its log writer's write pending), nothing is taken
    storing = asyncio.create_task(projector.handle(TurnEnded(turn=1)))
    await asyncio.sleep(0)
    assert not projector.take_now(TextDelta(message_id="m1", text="!"))
    await storing
    assert projector.take_now(TextDelta(message_id="m1", text="!"))
    await projector.close()
    assert [(e.kind, e.payload.get("text")) async for e in ConversationEvent.objects.filter(
        conversation=conversation).order_by("seq")] == [
        ("text_delta", "Hel"), ("text_delta", "lo rooms"), ("turn_ended", None),
        ("text_delta", "!")]


async def test_take_now_does_not_overtake_an_event_waiting_for_the_projector(
        acme: Team, alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by review: when a tick's flush releases the projector, a task that waited for it
    # with an event in hand takes it only at its next step; a delta taken in between would
    # be stored ahead of that event (here a tool call's arguments ahead of its start).
    conversation, _, projector = await projected(acme, alice)
    await projector.handle(MessageStarted(message_id="m1"))
    await projector.handle(TextDelta(message_id="m1", text="a"))
    await projector.handle(TextDelta(message_id="m1", text="b"))  # waits for a tick
    written, release = asyncio.Event(), asyncio.Event()
    flush = projector._flush

    async def slow_flush(*logged: Any) -> None:  # the tick's write takes a while
        await flush(*logged)
        written.set()
        await release.wait()

    monkeypatch.setattr(projector, "_flush", slow_flush)
    projector.coalesce_s = 0.0
    tick = asyncio.create_task(projector.tick())
    await written.wait()
    monkeypatch.setattr(projector, "_flush", flush)
    started = asyncio.create_task(projector.handle(
        ToolCallStarted(message_id="m1", index=0, name="Bash")))
    await asyncio.sleep(0)  # it waits for the projector
    arguments = ToolCallArgumentsDelta(message_id="m1", index=0, arguments_delta="{}")
    taken: list[bool] = []
    release.set()  # the runner's step comes between the tick's release and the waiting task's
    asyncio.get_running_loop().call_soon(lambda: taken.append(projector.take_now(arguments)))
    await tick
    await started
    assert taken == [False]
    await projector.handle(arguments)
    await projector.close()
    assert [kind async for kind in ConversationEvent.objects.filter(
        conversation=conversation).order_by("seq").values_list("kind", flat=True)] == [
        "message_started", "text_delta", "text_delta", "tool_call_started", "tool_call_delta"]


async def test_a_message_start_is_stored_with_its_first_delta_in_one_write(
        acme: Team, alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    # Run start (issue 22): message_started and the first text_delta in one thread hop and
    # one transaction, the row created holding the text; not the start alone, then the delta.
    conversation, run, projector = await projected(acme, alice)
    with recorded_hops(monkeypatch) as hops:
        await projector.handle(MessageStarted(message_id="m1"))
        assert hops == []  # it waits for its first delta, which follows at once
        await projector.handle(TextDelta(message_id="m1", text="Hel"))
    assert hops == ["Projector._store_start"]
    kinds = [(e.seq, e.kind) async for e in ConversationEvent.objects.filter(
        conversation=conversation).order_by("seq")]
    assert kinds == [(1, "message_started"), (2, "text_delta")]
    message = await Message.objects.aget(run=run, engine_id="m1")
    assert (message.status, message.content) == (MessageStatus.STREAMING,
                                                 [{"type": "text", "text": "Hel"}])
    await projector.handle(TextDelta(message_id="m1", text="lo"))  # coalesced, as before
    await projector.close()
    assert await stored_deltas(conversation) == ["Hel", "lo"]


async def test_an_event_is_stored_by_its_seq_update_and_its_insert(
        acme: Team, alice: User) -> None:
    # Issue 20: an event that changes more than the log (here the run's status) is stored in
    # its own transaction; the seq UPDATE locks the conversation row, so no lock before it.
    conversation, _, projector = await projected(acme, alice)

    @sync_to_async
    def store(event: AwaitingInput) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            projector._store(event)
        return [q["sql"].split(" ", 2)[0] + " " + q["sql"].split(" ", 2)[1] for q in queries
                if not q["sql"].startswith(("BEGIN", "COMMIT"))]

    assert await store(AwaitingInput(question_id="q1", question="Which?")) == [
        'UPDATE "rooms_conversation"', 'INSERT INTO', 'UPDATE "rooms_run"']
    assert [(e.seq, e.kind) async for e in ConversationEvent.objects.filter(
        conversation=conversation)] == [(1, "awaiting_input")]


async def test_an_event_that_changes_only_the_log_goes_with_the_waiting_deltas(
        acme: Team, alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 20: a turn's start and end, a tool call's start... are written by the log writer
    # (one write with the deltas waiting before them), not each in a transaction, a thread hop
    # and a broadcast of its own; a tool call's start still reaches the message's draft.
    conversation, run, projector = await projected(acme, alice)
    await projector.handle(MessageStarted(message_id="m1"))
    await projector.handle(TextDelta(message_id="m1", text="Hel"))  # the start's write
    await projector.handle(TextDelta(message_id="m1", text="lo"))  # waits
    with recorded_hops(monkeypatch) as hops:
        await projector.handle(ToolCallStarted(message_id="m1", index=0, name="Bash"))
        await projector.handle(TurnEnded(turn=1))
    assert hops == ["_store", "_store"]  # the log writer's, once for each: no Projector._store
    kinds = [(e.seq, e.kind) async for e in ConversationEvent.objects.filter(
        conversation=conversation).order_by("seq")]
    assert kinds == [(1, "message_started"), (2, "text_delta"), (3, "text_delta"),
                     (4, "tool_call_started"), (5, "turn_ended")]
    # a checkpoint due: the next write stores the draft, so what a client joining now reads
    # is the draft alone (nothing of the log after it)
    projector._drafts["m1"].checkpointed = -CHECKPOINT_S
    await projector.handle(TextDelta(message_id="m1", text="!"))
    await projector.close()
    message = await Message.objects.aget(run=run, engine_id="m1")
    assert await sync_to_async(content_so_far)(message) == [
        {"type": "text", "text": "Hello!"},
        {"type": "tool_use", "name": "Bash", "partial_arguments": "", "index": 0}]


async def test_a_message_keeps_its_calls_usage_and_the_usage_event_only_logs(
        acme: Team, alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 20: the usage of the call that wrote a message comes with its message_ended, in
    # the UPDATE that ends the row; the usage event that follows (the context gauge) changes
    # only the log, so the log writer stores it (no transaction of its own).
    conversation, run, projector = await projected(acme, alice)
    usage = Usage(input_tokens=12, output_tokens=3)
    await projector.handle(MessageStarted(message_id="m1"))
    await projector.handle(TextDelta(message_id="m1", text="Hi"))
    await projector.handle(MessageEnded(message_id="m1", usage=usage, message=EngineMessage(
        role="assistant", content="Hi", provider="anthropic")))
    with recorded_hops(monkeypatch) as hops:
        await projector.handle(UsageUpdated(usage=usage, context_tokens=15,
                                            context_window=200_000))
    assert hops == ["_store"]  # the log writer's
    row = await Message.objects.aget(run=run, engine_id="m1")
    assert row.usage == {"input_tokens": 12, "output_tokens": 3}
    assert [kind async for kind in ConversationEvent.objects.filter(
        conversation=conversation).order_by("seq").values_list("kind", flat=True)] == [
        "message_started", "text_delta", "message_ended", "usage"]


async def test_a_tick_whose_flush_failed_fails_the_runs_next_event_and_its_close(
        acme: Team, alice: User) -> None:
    # A delta after a message's first is written by a tick, which the run does not await:
    # its failure (the conversation deleted, the database gone) reaches the run at its next
    # event, or at its close, so the run ends visibly instead of streaming on into nothing.
    conversation, _, projector = await projected(acme, alice)
    await projector.handle(MessageStarted(message_id="m1"))
    await projector.handle(TextDelta(message_id="m1", text="first"))
    await projector.handle(TextDelta(message_id="m1", text=" more"))
    await conversation.adelete()
    projector.coalesce_s = 0.0  # due now
    with pytest.raises(Conversation.DoesNotExist):
        await projector.tick()  # the pulse logs it
    assert not projector.take_now(TextDelta(message_id="m1", text=" again"))  # handle raises
    with pytest.raises(Conversation.DoesNotExist):
        await projector.handle(TextDelta(message_id="m1", text=" again"))
    await projector.handle(TextDelta(message_id="m1", text=" and"))  # raised once
    with pytest.raises(Conversation.DoesNotExist):
        await projector.tick()
    with pytest.raises(Conversation.DoesNotExist):
        await projector.close()


async def test_a_run_streaming_into_a_deleted_conversation_fails_within_a_few_windows(
        settings: Any, acme: Team, alice: User) -> None:
    # The same with the worker's pulse ticking, as a hosted run streams (found by review).
    settings.CONFAB = {**settings.CONFAB, "COALESCE_MS": 10.0}
    room = await Room.objects.acreate(team=acme, name="General", created_by=alice)
    conversation = await Conversation.objects.acreate(room=room, title="t", created_by=alice)
    run = await Run.objects.acreate(conversation=conversation, started_by=alice)
    projector = Projector(conversation.pk, run.pk, PendingMessages(conversation.pk, run.pk),
                          coalesce_ms=10, coalesce_bytes=2048)
    with pulse().watching(projector):
        await projector.handle(MessageStarted(message_id="m1"))
        await projector.handle(TextDelta(message_id="m1", text="first"))
        await conversation.adelete()
        with pytest.raises(Conversation.DoesNotExist):
            for _ in range(40):  # some 400 ms of streaming, 40 windows
                await projector.handle(TextDelta(message_id="m1", text="more "))
                await asyncio.sleep(0.01)
