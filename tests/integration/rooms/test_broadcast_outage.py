"""A broadcast that fails because the channel layer is down never fails a stored run (issue 26):
a real Redis of the test's own is killed (``kill -9``) under the default channel layer. The
events are stored with their seqs and the write returns (sockets repair by ``after_seq``); a
``run.start`` dropped with the commit leaves the run queued, and the sweeper dispatches it again
once Redis is back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.layers import channel_layers, get_channel_layer
from django.test import override_settings
from django.utils import timezone

from apps.accounts.models import Membership, Team, User
from apps.realtime.broadcast import BROADCAST, broadcast_layer
from apps.realtime.groups import RUN_CHANNEL, conversation_group
from apps.rooms.log_writer import log_writer
from apps.rooms.models import Conversation, ConversationEvent, Message, Room, Run, RunStatus
from apps.rooms.services.messages import message_post
from apps.rooms.services.runs import runs_sweep
from tests.services.redis import RedisServer

pytestmark = pytest.mark.django_db(transaction=True)
CONFAB = __import__("django.conf").conf.settings.CONFAB


@pytest.fixture
def redis(settings) -> Iterator[RedisServer]:
    """The default and the broadcast channel layers, as settings make them, on a Redis of the
    test's own (killing it spares the session's)."""
    with RedisServer() as server:
        hosts = [{"address": server.url, "socket_timeout": 30}]
        settings.CHANNEL_LAYERS = {
            "default": {"BACKEND": "apps.realtime.core_layer.BlockingPoolRedisChannelLayer",
                        "CONFIG": {"hosts": hosts}},
            BROADCAST: {"BACKEND": "apps.realtime.pubsub.BatchedPubSubChannelLayer",
                        "CONFIG": {"hosts": hosts}}}
        channel_layers.backends.clear()
        yield server
    channel_layers.backends.clear()


@pytest.fixture
def conversation(acme: Team, alice: User) -> Conversation:
    room = Room.objects.create(team=acme, name="General", created_by=alice)
    return Conversation.objects.create(room=room, title="t", created_by=alice)


def delta(text: str) -> tuple[str, dict]:
    return "text_delta", {"kind": "text_delta", "message_id": "m", "text": text}


async def test_a_flush_while_the_layer_is_down_is_stored_and_the_run_goes_on(
        redis: RedisServer, conversation: Conversation, alice: User) -> None:
    run = await Run.objects.acreate(conversation=conversation, started_by=alice)
    redis.kill()
    await log_writer().write(conversation.pk, run.pk, [delta("a"), delta("b")], {})  # no raise
    assert [(e.seq, e.payload["text"]) async for e in ConversationEvent.objects.filter(
        conversation=conversation).order_by("seq")] == [(1, "a"), (2, "b")]
    redis.revive()
    layer = broadcast_layer()
    channel = await layer.new_channel()
    await layer.group_add(conversation_group(conversation.pk), channel)
    await log_writer().write(conversation.pk, run.pk, [delta("c")], {})
    heard = await asyncio.wait_for(layer.receive(channel), 10)
    frame = json.loads(heard["frame"])  # the frame the writer encoded once for every watcher
    assert (heard["seq"], frame["seq"], frame["event"]["text"]) == (3, 3, "c")  # seq-exact
    await layer.flush()


@override_settings(CONFAB={**CONFAB, "CLAIM_TIMEOUT_S": 20, "MAX_DISPATCHES": 3})
def test_a_run_start_lost_in_the_outage_is_dispatched_again_by_the_sweeper(
        redis: RedisServer, conversation: Conversation, alice: User) -> None:
    redis.kill()
    membership = Membership.objects.select_related("user", "team").get(
        user=alice, team_id=conversation.room.team_id)
    message_post(conversation=conversation, membership=membership, text="go", client_id="a")
    assert Message.objects.filter(conversation=conversation, client_id="a").exists()  # kept
    run = Run.objects.get(conversation=conversation)
    assert (run.status, run.dispatches) == (RunStatus.QUEUED, 1)  # its run.start was dropped
    redis.revive()
    Run.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(minutes=1))
    assert runs_sweep() == [run.pk]
    layer = get_channel_layer()

    async def next_dispatch() -> dict:
        try:
            return await asyncio.wait_for(layer.receive(RUN_CHANNEL), 10)
        finally:
            await layer.close_pools()

    assert async_to_sync(next_dispatch)() == {"type": "run.start", "run_id": run.pk}
    run.refresh_from_db()
    assert (run.status, run.dispatches) == (RunStatus.QUEUED, 2)
