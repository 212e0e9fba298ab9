"""The log writer's one statement on PostgreSQL (issue 20): the seqs, the events and the
checkpoints of every waiting flush in one round trip, a conversation that is gone storing nothing
and failing only its own flushes (see conftest.py for how this directory runs)."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import Team
from apps.rooms.log_writer import _Batch, _store, _writer_thread, log_writer
from apps.rooms.models import Conversation, ConversationEvent, Message, Room, Run

pytestmark = pytest.mark.django_db(transaction=True)


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


def test_every_flush_in_one_statement_with_consecutive_seqs_and_the_last_checkpoint() -> None:
    (a, run_a, message_a), (b, run_b, message_b) = _conversations(2)
    Conversation.objects.filter(pk=b).update(last_seq=40)  # b's log goes on from 40
    batches = [_Batch(a, run_a, [delta("a1"), delta("a2")], {message_a: ["first"]}, None),
               _Batch(b, run_b, [delta("b1")], {}, None),
               _Batch(a, run_a, [delta("a3")], {message_a: ["second"]}, None)]
    with CaptureQueriesContext(connection) as queries:
        gone = _store(batches)  # type: ignore[arg-type]
    assert gone == set() and len(queries) == 1
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


def test_a_conversation_that_is_gone_stores_nothing_and_the_others_are_stored() -> None:
    (kept, run_kept, _), (gone, run_gone, _) = _conversations(2)
    Conversation.objects.filter(pk=gone).delete()
    batches = [_Batch(kept, run_kept, [delta("ok")], {}, None),
               _Batch(gone, run_gone, [delta("lost")], {}, None)]
    assert _store(batches) == {gone}  # type: ignore[arg-type]
    assert list(ConversationEvent.objects.values_list("conversation_id", "seq")) == [(kept, 1)]
    assert batches[1].envelopes == []


def test_payloads_and_checkpoints_round_trip_exactly() -> None:
    """The events and checkpoints travel as one JSON document each: text that quoting, JSON
    escapes or the driver's placeholders could change is stored exactly as given."""
    ((conversation, run, message),) = _conversations(1)
    awkward = ["it's \"quoted\" \\ back", "%s %(x)s {}", "中文 ✓ 🚀 \u2028 \t\n", "$1 ?"]
    payloads = [("text_delta", {"kind": "text_delta", "message_id": "m", "text": text,
                                "n": 1.5e-7, "none": None}) for text in awkward]
    content = [{"type": "text", "text": "".join(awkward)}]
    _store([_Batch(conversation, run, payloads, {message: content}, None)])  # type: ignore[arg-type]
    stored = [e.payload for e in ConversationEvent.objects.order_by("seq")]
    assert stored == [payload for _, payload in payloads]
    row = Message.objects.get(pk=message)
    assert (row.content, row.checkpoint_seq) == (content, 4)


async def test_a_flush_is_not_held_behind_the_workers_other_database_calls() -> None:
    """The writer has a thread and a connection of its own: a flush is stored and broadcast
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
        await asyncio.get_running_loop().run_in_executor(_writer_thread(),
                                                         connections.close_all)
    assert await ConversationEvent.objects.filter(conversation_id=conversation).acount() == 1
