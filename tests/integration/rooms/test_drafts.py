"""A message being written is checkpointed at most once a second, and what the store says of
it is always the whole text so far: the checkpoint plus the log after it (issue 20: a checkpoint
per flush rewrote the whole text every 50 ms). A run that ends mid-message keeps it all. Time is
a :class:`FakeClock` the test advances."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.db import transaction

from apps.accounts.models import Team, User
from apps.engine.events import (
    MessageStarted,
    ReasoningDeltaEvent,
    TextDelta,
    ToolCallArgumentsDelta,
    ToolCallStarted,
)
from apps.rooms.drafts import CHECKPOINT_S, content_so_far
from apps.rooms.models import Conversation, Message, MessageStatus, Room, Run, RunStatus
from apps.rooms.ports import PendingMessages
from apps.rooms.projector import Projector
from apps.rooms.services.runs import run_finish
from apps.rooms.transcript import message_json
from tests.consumers.fake_clock import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def projector(acme: Team, alice: User) -> tuple[Projector, FakeClock]:
    room = await Room.objects.acreate(team=acme, name="General", created_by=alice)
    conversation = await Conversation.objects.acreate(room=room, title="t", created_by=alice)
    run = await Run.objects.acreate(conversation=conversation, started_by=alice,
                                    status=RunStatus.RUNNING)
    clock = FakeClock()
    return Projector(conversation.pk, run.pk, PendingMessages(conversation.pk, run.pk),
                     coalesce_ms=0, coalesce_bytes=1, clock=clock), clock  # each delta flushes


@sync_to_async
def last_seq(conversation_id: int) -> int:
    return Conversation.objects.get(pk=conversation_id).last_seq


@sync_to_async
def row() -> Message:
    return Message.objects.get(engine_id="m1")


async def so_far() -> list[dict]:
    message = await row()
    shown = await sync_to_async(message_json)(message)
    assert shown["content"] == await sync_to_async(content_so_far)(message)
    return shown["content"]


async def test_the_whole_text_so_far_with_one_checkpoint_a_second(projector) -> None:
    projector, clock = projector
    await projector.handle(MessageStarted(message_id="m1"))
    await projector.handle(ReasoningDeltaEvent(message_id="m1", text="Hmm."))
    for text in ("Hel", "lo", " there"):
        await projector.handle(TextDelta(message_id="m1", text=text))
    # the row was made with the first delta (the start's write); three flushes since, no rewrite
    assert (await row()).content == [{"type": "thinking", "thinking": "Hmm."}]
    assert await so_far() == [{"type": "thinking", "thinking": "Hmm."},
                              {"type": "text", "text": "Hello there"}]

    clock.advance(CHECKPOINT_S)
    await projector.handle(TextDelta(message_id="m1", text=","))
    stored = await row()
    assert stored.content[-1] == {"type": "text", "text": "Hello there,"}  # checkpointed
    assert stored.checkpoint_seq == await last_seq(stored.conversation_id)  # "," included
    await projector.handle(TextDelta(message_id="m1", text=" Bob"))
    await projector.handle(ToolCallStarted(message_id="m1", index=1, name="Bash"))
    await projector.handle(ToolCallArgumentsDelta(message_id="m1", index=1,
                                                  arguments_delta='{"comm'))
    assert (await row()).content == stored.content  # within the second: not rewritten
    assert await so_far() == [
        {"type": "thinking", "thinking": "Hmm."}, {"type": "text", "text": "Hello there, Bob"},
        {"type": "tool_use", "name": "Bash", "partial_arguments": '{"comm', "index": 1}]
    await projector.close()


async def test_a_run_that_ends_mid_message_keeps_what_was_said_after_the_checkpoint(
        projector) -> None:
    projector, clock = projector
    await projector.handle(MessageStarted(message_id="m1"))
    await projector.handle(TextDelta(message_id="m1", text="Half"))
    clock.advance(CHECKPOINT_S)
    await projector.handle(TextDelta(message_id="m1", text=" a"))  # checkpointed here
    await projector.handle(TextDelta(message_id="m1", text=" sentence"))
    await projector.close()

    @sync_to_async
    def interrupted() -> Message:
        with transaction.atomic():
            run_finish(projector.run_id, RunStatus.INTERRUPTED, error_kind="worker_lost")
        return Message.objects.get(engine_id="m1")

    message = await interrupted()
    assert message.status != MessageStatus.STREAMING
    assert message.content == [{"type": "text", "text": "Half a sentence"}]
