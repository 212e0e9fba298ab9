"""A logged event's frame is encoded once, by the writer, for every watcher (issue 20): the
group message carries the frame's text and each socket sends that text as it is, after its own
seq checks; a replay from the store sends the same text as the live frame."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.db import transaction

from apps.accounts.models import User
from apps.realtime.broadcast import broadcast_layer
from apps.realtime.groups import conversation_group
from apps.rooms.models import ConversationEvent
from apps.rooms.services.events import event_envelope, events_store
from tests.consumers.conftest import Client, connect

pytestmark = pytest.mark.django_db(transaction=True)


def store(conversation_id: int, title: str) -> ConversationEvent:
    with transaction.atomic():
        return events_store(conversation_id, [("title_changed", {
            "kind": "title_changed", "title": title, "by": None})])[0]


async def next_event_text(client: Client) -> str:
    """The raw text of the socket's next ``event`` frame (presence frames skipped)."""
    while True:
        text = await client.ws.receive_from(timeout=5)
        if json.loads(text)["type"] == "event":
            return text


async def test_every_watcher_sends_the_group_messages_frame_as_it_is(
        alice: User, bob: User, conversation) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    row = await sync_to_async(store)(conversation.pk, "Plans, again")
    envelope = dict(event_envelope(row))
    # Compact separators: only a socket that sends the writer's text as it is sends these.
    envelope["frame"] = json.dumps(json.loads(envelope["frame"]), separators=(",", ":"))
    await broadcast_layer().group_send(conversation_group(conversation.pk), envelope)
    assert await next_event_text(a) == envelope["frame"]
    assert await next_event_text(b) == envelope["frame"]
    await a.close()
    await b.close()


async def test_a_replayed_event_is_the_text_a_watcher_got_live(alice: User, conversation
                                                                ) -> None:
    watcher, _ = await connect(alice, conversation.pk)
    row = await sync_to_async(store)(conversation.pk, "Plans, again")
    await broadcast_layer().group_send(conversation_group(conversation.pk),
                                         dict(event_envelope(row)))
    live = await next_event_text(watcher)
    late, replayed = await connect(alice, conversation.pk, after_seq=0)
    assert replayed == json.loads(live) == {"type": "event", "seq": row.seq, "event": row.payload}
    await watcher.close()
    await late.close()
