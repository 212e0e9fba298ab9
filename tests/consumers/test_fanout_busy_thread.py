"""Broadcasts reach the socket without a trip to the database thread (issue 20): channels'
``dispatch`` awaits ``aclose_old_connections()`` (the process's one database thread) before every
message; the conversation's broadcasts come through the process's fanout and the socket's inbox
instead, so they do not wait behind that thread's other work (a join's state, a ``send``)."""

from __future__ import annotations

import asyncio
import json
import threading

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


def store(conversation_id: int) -> ConversationEvent:
    with transaction.atomic():
        return events_store(conversation_id, [("title_changed", {
            "kind": "title_changed", "title": "Plans, again", "by": None})])[0]


async def frame_of_type(client: Client, kind: str) -> dict:
    while True:
        frame = json.loads(await client.ws.receive_from(timeout=2))
        if frame["type"] == kind:
            return frame


async def test_live_frames_go_out_while_the_database_thread_is_busy(
        alice: User, conversation) -> None:
    watcher, _ = await connect(alice, conversation.pk)
    row = await sync_to_async(store)(conversation.pk)
    release = threading.Event()
    busy = asyncio.create_task(sync_to_async(release.wait)())  # holds the database thread
    try:
        group = conversation_group(conversation.pk)
        await broadcast_layer().group_send(group, dict(event_envelope(row)))
        event = await frame_of_type(watcher, "event")
        assert (event["seq"], event["event"]["kind"]) == (row.seq, "title_changed")
        await broadcast_layer().group_send(group, {"type": "presence.typing",
                                                     "user": {"id": 0, "name": "Bob"}})
        assert (await frame_of_type(watcher, "presence"))["typing"]["name"] == "Bob"
    finally:
        release.set()
        await busy
    await watcher.close()
