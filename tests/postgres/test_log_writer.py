"""The log writer's one statement on PostgreSQL (issue 20), on a connection of its own on the
event loop: the seqs, the events and the checkpoints of every waiting flush in one round trip,
a conversation that is gone storing nothing and failing only its own flushes, a broken
connection replaced (see conftest.py for how this directory runs)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from django.db import connection, connections

from apps.accounts.models import Team
from apps.rooms import log_writer as log_writer_module
from apps.rooms.log_writer import LogWriter, _Batch, close_log_writer, log_writer
from apps.rooms.models import Conversation, ConversationEvent, Message, Room, Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def statements(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[str]]:
    """The statements the writer's connection executes (a pass-through spy); the connection
    is closed at the end."""
    executed: list[str] = []
    execute = psycopg.AsyncConnection.execute

    async def spy(self: psycopg.AsyncConnection[Any], query: Any, *args: Any,
                  **kwargs: Any) -> Any:
        executed.append(str(query))
        return await execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncConnection, "execute", spy)
    try:
        yield executed
    finally:
        await close_log_writer()


async def store(batches: list[_Batch]) -> set[int]:
    return await log_writer()._store(batches)


def _conversations(count: int) -> list[tuple[int, int, int]]:
    """(conversation, run, its message being written) ids."""
    team = Team.objects.create(name="Writers", slug="writers")
    room = Room.objects.create(team=team, name="room")
    out = []
    for i in range(count):
        conversation = Conversation.objects.create(room=room, title=f"c{i}")
        run = Run.objects.create(conversation=conversation)
        message = Message.objects.create(conversation=conversation, run=run, role="assistant")
        out.append((conversation.pk, run.pk, message.pk))
    return out


def delta(text: str) -> tuple[str, dict]:
    return "text_delta", {"kind": "text_delta", "message_id": "m", "text": text}


async def test_every_flush_in_one_statement_with_consecutive_seqs_and_the_last_checkpoint(
        statements: list[str]) -> None:
    (a, run_a, message_a), (b, run_b, message_b) = await sync_to_async(_conversations)(2)
    await Conversation.objects.filter(pk=b).aupdate(last_seq=40)  # b's log goes on from 40
    batches = [_Batch(a, run_a, [delta("a1"), delta("a2")], {message_a: ["first"]}, None),
               _Batch(b, run_b, [delta("b1")], {}, None),
               _Batch(a, run_a, [delta("a3")], {message_a: ["second"]}, None)]
    assert await store(batches) == set()  # type: ignore[arg-type]
    assert len(statements) == 1 and statements[0].lstrip().startswith("WITH s AS")
    await sync_to_async(_check_first_write)(a, b, message_a, batches)


def _check_first_write(a: int, b: int, message_a: int, batches: list[_Batch]) -> None:
    stored = {(e.conversation_id, e.seq): e.payload["text"]
              for e in ConversationEvent.objects.all()}
    assert stored == {(a, 1): "a1", (a, 2): "a2", (b, 41): "b1", (a, 3): "a3"}
    assert [(e["seq"], json.loads(e["frame"])["event"]["text"]) for e in batches[2].envelopes
            ] == [(3, "a3")]  # the frame carries the payload as stored
    assert json.loads(batches[0].envelopes[1]["frame"]) == {
        "type": "event", "seq": 2, "event": {"kind": "text_delta", "message_id": "m",
                                             "text": "a2"}}
    row = Message.objects.get(pk=message_a)
    assert (row.content, row.checkpoint_seq) == (["second"], 3)  # the later flush's
    assert Conversation.objects.get(pk=a).last_seq == 3


async def test_a_conversation_that_is_gone_stores_nothing_and_the_others_are_stored(
        statements: list[str]) -> None:
    (kept, run_kept, _), (gone, run_gone, _) = await sync_to_async(_conversations)(2)
    await Conversation.objects.filter(pk=gone).adelete()
    batches = [_Batch(kept, run_kept, [delta("ok")], {}, None),
               _Batch(gone, run_gone, [delta("lost")], {}, None)]
    assert await store(batches) == {gone}  # type: ignore[arg-type]
    assert [row async for row in ConversationEvent.objects.values_list(
        "conversation_id", "seq")] == [(kept, 1)]
    assert batches[1].envelopes == []


async def test_payloads_and_checkpoints_round_trip_exactly(statements: list[str]) -> None:
    """The events and checkpoints travel as one JSON document each: text that quoting, JSON
    escapes or the driver's placeholders could change is stored exactly as given."""
    ((conversation, run, message),) = await sync_to_async(_conversations)(1)
    awkward = ["it's \"quoted\" \\ back", "%s %(x)s {}", "中文 ✓ 🚀 \u2028 \t\n", "$1 ?"]
    payloads = [("text_delta", {"kind": "text_delta", "message_id": "m", "text": text,
                                "n": 1.5e-7, "none": None}) for text in awkward]
    content = [{"type": "text", "text": "".join(awkward)}]
    await store([_Batch(conversation, run, payloads, {message: content}, None)])  # type: ignore[arg-type]
    stored = [e.payload async for e in ConversationEvent.objects.order_by("seq")]
    assert stored == [payload for _, payload in payloads]
    row = await Message.objects.aget(pk=message)
    assert (row.content, row.checkpoint_seq) == (content, 4)


async def test_a_flush_is_not_held_behind_the_workers_other_database_calls(
        statements: list[str]) -> None:
    """The writer has a connection of its own on the loop: a flush is stored and broadcast
    while the thread every other database call of the process shares is busy."""
    channel_layers.backends.clear()  # a layer of this test's event loop
    ((conversation, run, _),) = await sync_to_async(_conversations)(1)
    busy, release = threading.Event(), threading.Event()

    def hold() -> None:
        busy.set()
        release.wait(10)

    held = asyncio.ensure_future(database_sync_to_async(hold)())
    assert await asyncio.to_thread(busy.wait, 5)
    try:
        await asyncio.wait_for(log_writer().write(conversation, run, [delta("x")], {}), 5)
        assert not held.done()
    finally:
        release.set()
        await held
    assert await ConversationEvent.objects.filter(conversation_id=conversation).acount() == 1


async def test_a_broken_connection_is_replaced_and_the_write_still_stored(
        statements: list[str]) -> None:
    """When the writer's connection dies (the server restarted it), the write that finds it
    dead fails as a whole, and its batches, each written again alone, go on a new one."""
    channel_layers.backends.clear()  # a layer of this test's event loop
    ((conversation, run, _),) = await sync_to_async(_conversations)(1)
    writer = log_writer()
    await writer.write(conversation, run, [delta("before")], {})
    assert writer._connection is not None
    dead = writer._connection.info.backend_pid
    await sync_to_async(_terminate)(dead)
    await asyncio.wait_for(writer.write(conversation, run, [delta("after")], {}), 10)
    assert writer._connection is not None and writer._connection.info.backend_pid != dead
    assert await _texts(conversation) == ["before", "after"]


def _terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


async def test_closing_waits_for_the_statement_on_the_connection(statements: list[str]) -> None:
    """The worker closes the connection while its runs still write: a statement in flight
    gets its answer first. Closed under it, the server still committed it while the writer,
    seeing it fail, stored its batch again (found by review: ``once`` stored twice)."""
    writer, conversation, run = await _warm_writer()
    async with _row_locked(conversation):
        pending = asyncio.ensure_future(writer.write(conversation, run, [delta("once")], {}))
        await _statement_started(statements, 2)
        closing = asyncio.ensure_future(close_log_writer())
        await asyncio.sleep(0.2)
        assert not closing.done()  # it waits for the statement's answer
    await asyncio.wait_for(asyncio.gather(pending, closing), 10)
    assert writer._connection is None
    assert await _texts(conversation) == ["warm", "once"]


async def test_a_statement_that_outlasts_the_wait_is_cancelled_and_stored_once(
        statements: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing cancels a statement still running after CLOSE_WAIT_S: the write rolls back and
    its batch, written again alone on a new connection, is stored once."""
    monkeypatch.setattr(log_writer_module, "CLOSE_WAIT_S", 0.3)
    writer, conversation, run = await _warm_writer()
    async with _row_locked(conversation):
        pending = asyncio.ensure_future(writer.write(conversation, run, [delta("once")], {}))
        await _statement_started(statements, 2)
        await asyncio.wait_for(close_log_writer(), 10)  # cancelled, then the retry waits
        await _statement_started(statements, 3)  # the batch alone, on a new connection
    await asyncio.wait_for(pending, 10)
    assert await _texts(conversation) == ["warm", "once"]


async def _warm_writer() -> tuple[LogWriter, int, int]:
    """This loop's writer with its connection open (one event written), a conversation, its
    run."""
    channel_layers.backends.clear()  # a layer of this test's event loop
    ((conversation, run, _),) = await sync_to_async(_conversations)(1)
    writer = log_writer()
    await writer.write(conversation, run, [delta("warm")], {})
    return writer, conversation, run


@asynccontextmanager
async def _row_locked(conversation: int) -> AsyncIterator[None]:
    """The conversation's row locked by another connection until the block ends: the
    writer's statement waits for it."""
    params = connections["default"].get_connection_params()
    params.pop("cursor_factory")
    async with await psycopg.AsyncConnection.connect(**params) as locker:
        await locker.execute("SELECT 1 FROM rooms_conversation WHERE id = %s FOR UPDATE",
                             [conversation])
        yield
        await locker.commit()


async def _texts(conversation: int) -> list[str]:
    return [e.payload["text"] async for e in ConversationEvent.objects.filter(
        conversation_id=conversation).order_by("seq")]


async def _statement_started(statements: list[str], count: int) -> None:
    """Until the writer has begun ``count`` statements (each waits for the locked row)."""
    async with asyncio.timeout(5):
        while sum(s.lstrip().startswith("WITH") for s in statements) < count:
            await asyncio.sleep(0.01)


async def test_the_connection_takes_the_role_of_the_settings(
        statements: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``OPTIONS["assume_role"]`` applies to the writer's connection as to Django's."""
    role = await sync_to_async(_current_user)()
    monkeypatch.setitem(connections["default"].settings_dict["OPTIONS"], "assume_role", role)
    cursor = await (await log_writer()._connect()).execute("SHOW role")
    assert await cursor.fetchall() == [(role,)]  # "none" without SET ROLE


def _current_user() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        return cursor.fetchone()[0]
