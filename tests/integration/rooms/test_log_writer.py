"""Several runs' flushes share the worker's log writer (issue 20): every event is stored with
its seq before it is broadcast, each conversation's events reach its group in seq order, and a
conversation that is gone fails only its own write."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import channel_layers

from apps.accounts.models import Team, User
from apps.realtime.broadcast import broadcast_layer
from apps.realtime.groups import conversation_group
from apps.rooms.log_writer import _Batch, _store, log_writer
from apps.rooms.models import Conversation, ConversationEvent, Message, Room, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> None:
    channel_layers.backends.clear()


async def conversations(team: Team, user: User, count: int) -> list[tuple[int, int]]:
    room = await Room.objects.acreate(team=team, name="General", created_by=user)
    out = []
    for i in range(count):
        conversation = await Conversation.objects.acreate(room=room, title=f"c{i}",
                                                          created_by=user)
        run = await Run.objects.acreate(conversation=conversation, started_by=user)
        out.append((conversation.pk, run.pk))
    return out


def delta(text: str) -> tuple[str, dict]:
    return "text_delta", {"kind": "text_delta", "message_id": "m", "text": text}


async def test_concurrent_flushes_are_stored_then_broadcast_in_seq_order(
        acme: Team, alice: User) -> None:
    convs = await conversations(acme, alice, 3)
    layer = broadcast_layer()
    channel = await layer.new_channel()
    for conversation_id, _ in convs:
        await layer.group_add(conversation_group(conversation_id), channel)
    writer = log_writer()
    await asyncio.gather(*(writer.write(c, r, [delta(f"{c}a"), delta(f"{c}b")], {})
                           for c, r in convs for _ in range(2)))
    heard: dict[int, list[int]] = {}
    for _ in range(len(convs) * 4):
        message = await asyncio.wait_for(layer.receive(channel), 5)
        frame = json.loads(message["frame"])  # encoded once, for every watcher
        assert frame["seq"] == message["seq"]
        conversation_id = int(frame["event"]["text"][:-1])
        assert await ConversationEvent.objects.filter(  # stored before it was broadcast
            conversation_id=conversation_id, seq=message["seq"]).aexists()
        heard.setdefault(conversation_id, []).append(message["seq"])
    assert heard == {c: [1, 2, 3, 4] for c, _ in convs}


async def test_a_conversation_that_is_gone_fails_only_its_own_write(
        acme: Team, alice: User) -> None:
    (kept, kept_run), (gone, gone_run) = await conversations(acme, alice, 2)
    await sync_to_async(Conversation.objects.filter(pk=gone).delete)()
    writer = log_writer()
    results = await asyncio.gather(writer.write(kept, kept_run, [delta("ok")], {}),
                                   writer.write(gone, gone_run, [delta("lost")], {}),
                                   return_exceptions=True)
    assert results[0] is None
    assert isinstance(results[1], Conversation.DoesNotExist)
    assert [e.payload["text"] async for e in ConversationEvent.objects.filter(
        conversation_id=kept)] == ["ok"]


def test_a_round_costs_the_same_statements_for_one_conversation_as_for_eight(
        acme: Team, alice: User, django_assert_num_queries) -> None:
    """One transaction stores every waiting flush: the seqs, the events and the checkpoints
    in one statement each, whatever the number of conversations (and their batches)."""
    convs = async_to_sync(conversations)(acme, alice, 8)
    checkpoint = [{"type": "text", "text": "so far"}]

    def batch(conversation_id: int, run_id: int, text: str) -> _Batch:
        message = Message.objects.create(conversation_id=conversation_id, role="assistant",
                                         run_id=run_id)
        return _Batch(conversation_id, run_id, [delta(text), delta(text)],
                      {message.pk: checkpoint}, done=None)  # type: ignore[arg-type]

    one = [batch(*convs[0], "a")]
    many = [batch(c, r, f"{c}{i}") for c, r in convs for i in range(2)]
    with django_assert_num_queries(5):  # SAVEPOINT/BEGIN, UPDATE, INSERT, UPDATE, RELEASE
        _store(one)
    with django_assert_num_queries(5):
        _store(many)
    conversation_id = convs[3][0]
    stored = [(e.seq, e.payload["text"]) for e in ConversationEvent.objects.filter(
        conversation_id=conversation_id)]
    assert stored == [(1, f"{conversation_id}0"), (2, f"{conversation_id}0"),
                      (3, f"{conversation_id}1"), (4, f"{conversation_id}1")]  # batch order
    assert [b.envelopes[0]["seq"] for b in many[6:8]] == [1, 3]
    assert all(content == checkpoint for content in Message.objects.values_list("content",
                                                                             flat=True))


async def test_a_write_cancelled_with_the_loop_leaves_no_writer_waiting(
        acme: Team, alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    # When the worker stops, asyncio cancels every task: the writer's, mid-write, and a
    # run's host, whose projector's last flush then queues behind it. That flush is written
    # by a drain of its own, and the writer of the flush being written is told (cancelled),
    # not left waiting for ever (the process would never exit).
    import threading

    from apps.rooms import log_writer as module

    (a, run_a), (b, run_b) = await conversations(acme, alice, 2)
    entered, release = threading.Event(), threading.Event()

    def held(batches: list[_Batch]) -> set[int]:
        if not entered.is_set():
            entered.set()
            release.wait(10)
        return _store(batches)

    monkeypatch.setattr(module, "_store", held)
    writer = log_writer()
    first = asyncio.create_task(writer.write(a, run_a, [delta("a1")], {}))
    await asyncio.to_thread(entered.wait, 10)
    last = asyncio.create_task(writer.write(b, run_b, [delta("b1")], {}))
    await asyncio.sleep(0)  # queued behind the write in progress
    assert writer._task is not None
    writer._task.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(first, 10)
    await asyncio.wait_for(last, 10)
    assert [e.payload["text"] async for e in ConversationEvent.objects.filter(
        conversation_id=b)] == ["b1"]
