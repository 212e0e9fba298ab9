"""The projector's coalescing as the room sees it: a message's first delta goes out at once
(it is what says the agent started answering), the rest wait for the window."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Team, User
from apps.engine.events import TextDelta
from apps.rooms.models import Conversation, ConversationEvent, Room, Run
from apps.rooms.ports import PendingMessages
from apps.rooms.projector import Projector

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def stored_deltas(conversation: Conversation) -> list[str]:
    return [e.payload["text"] for e in ConversationEvent.objects.filter(
        conversation=conversation, kind="text_delta").order_by("seq")]


async def test_the_first_delta_of_a_message_is_stored_at_once_and_the_rest_coalesce(
        acme: Team, alice: User) -> None:
    room = await Room.objects.acreate(team=acme, name="General", created_by=alice)
    conversation = await Conversation.objects.acreate(room=room, title="t", created_by=alice)
    run = await Run.objects.acreate(conversation=conversation, started_by=alice)
    projector = Projector(conversation.pk, run.pk, PendingMessages(conversation.pk, run.pk),
                          coalesce_ms=60_000, coalesce_bytes=1 << 20)  # nothing else flushes
    for text in ("Hel", "lo", " room"):
        await projector.handle(TextDelta(message_id="m1", text=text))
    await projector.handle(TextDelta(message_id="m2", text="Next"))
    assert await stored_deltas(conversation) == ["Hel", "lo room", "Next"]
    await projector.close()

