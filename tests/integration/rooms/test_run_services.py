"""Run and message services against the database: one active run per conversation, seq without
gaps or repeats under concurrency, follow-up runs for waiting messages, and the sweeper."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import AsyncToSync, sync_to_async
from channels.layers import get_channel_layer
from django.db import close_old_connections
from django.db.models.signals import post_save
from django.test import override_settings
from django.utils import timezone

from apps.accounts.models import Membership, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.realtime.broadcast import broadcast_layer
from apps.realtime.groups import conversation_group, run_group
from apps.rooms.host import _setup_runs
from apps.rooms.models import (
    Conversation,
    ConversationEvent,
    Message,
    MessageStatus,
    Room,
    Run,
    RunStatus,
)
from apps.rooms.services.events import event_append
from apps.rooms.services.messages import message_post
from apps.rooms.services.runs import (
    _interrupt,
    run_claim,
    run_decide,
    run_finish,
    run_stop,
    runs_sweep,
)
from apps.rooms.sweeper import sweep_forever

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def conversation(acme, alice) -> Conversation:
    room = Room.objects.create(team=acme, name="General")
    return Conversation.objects.create(room=room, title="t")


def member(user: User, conversation: Conversation) -> Membership:
    return Membership.objects.select_related("user", "team").get(
        user=user, team_id=conversation.room.team_id)


def in_threads(count: int, work) -> list[object]:
    """Run ``work(i)`` in ``count`` threads released at once; their results or exceptions."""
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def body(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except Exception as exc:
            results[i] = exc
        finally:
            close_old_connections()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_messages_sent_at_the_same_instant_start_one_run(alice, bob, conversation) -> None:
    people = [member(alice, conversation), member(bob, conversation)] * 3
    results = in_threads(6, lambda i: message_post(
        conversation=conversation, membership=people[i], text=f"m{i}", client_id=f"c{i}"))
    assert not [r for r in results if isinstance(r, Exception)]
    assert Run.objects.filter(conversation=conversation).count() == 1
    assert sorted(r.queued for r in results) == [False] + [True] * 5
    assert Message.objects.filter(conversation=conversation, status="pending").count() == 5


def test_seq_is_allocated_without_gaps_or_repeats(conversation) -> None:
    in_threads(8, lambda i: [event_append(conversation.pk, "note", {"kind": "note", "i": i})
                             for _ in range(10)])
    seqs = list(ConversationEvent.objects.filter(conversation=conversation)
                .values_list("seq", flat=True))
    assert sorted(seqs) == list(range(1, 81))
    conversation.refresh_from_db()
    assert conversation.last_seq == 80


def test_a_resend_returns_the_same_message(alice, conversation) -> None:
    first = message_post(conversation=conversation, membership=member(alice, conversation),
                         text="hello", client_id="same")
    again = message_post(conversation=conversation, membership=member(alice, conversation),
                         text="hello", client_id="same")
    assert again.message.pk == first.message.pk and not again.created
    assert ConversationEvent.objects.filter(kind="user_message").count() == 1


def test_a_viewer_cannot_send_or_stop(carol, conversation) -> None:
    viewer = member(carol, conversation)
    with pytest.raises(ApplicationError) as refused:
        message_post(conversation=conversation, membership=viewer, text="x", client_id="v")
    assert refused.value.code == "forbidden"
    with pytest.raises(ApplicationError):
        run_stop(conversation=conversation, membership=viewer)
    assert not Message.objects.exists()


def test_messages_waiting_when_a_run_ends_start_the_next_run(alice, bob, conversation) -> None:
    started = message_post(conversation=conversation, membership=member(alice, conversation),
                           text="go", client_id="a")
    message_post(conversation=conversation, membership=member(bob, conversation),
                 text="and this", client_id="b")
    first = Run.objects.get(conversation=conversation)
    follow_up = run_finish(first.pk, RunStatus.COMPLETED)
    assert started.queued is False and follow_up is not None
    assert follow_up.status == RunStatus.QUEUED and follow_up.started_by_id == bob.pk
    assert run_finish(follow_up.pk, RunStatus.COMPLETED) is not None  # bob's still waits
    # (the next run's inbox takes it at its first step; until then it stays pending)


def test_chat_still_waiting_when_a_mention_run_ends_joins_the_history_without_a_run(
        alice, bob, conversation) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(agent_mode="mention")
    conversation.refresh_from_db()
    started = message_post(conversation=conversation, membership=member(alice, conversation),
                           text="@agent go", client_id="a")
    chat = message_post(conversation=conversation, membership=member(bob, conversation),
                        text="brb", client_id="b")
    assert (started.run, chat.run, chat.queued) == ("started", "none", True)
    run = Run.objects.get(conversation=conversation)
    assert run_finish(run.pk, RunStatus.COMPLETED) is None
    chat.message.refresh_from_db()
    assert chat.message.status == "complete" and chat.message.position == 2
    joined = ConversationEvent.objects.filter(kind="messages_injected").get().payload
    assert [m["author"]["name"] for m in joined["messages"]] == ["Bob"]


def test_a_mention_still_waiting_when_the_run_ends_starts_the_next(alice, bob, conversation
                                                                   ) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(agent_mode="mention")
    conversation.refresh_from_db()
    message_post(conversation=conversation, membership=member(alice, conversation),
                 text="@agent go", client_id="a")
    message_post(conversation=conversation, membership=member(alice, conversation),
                 text="chat first", client_id="b")
    message_post(conversation=conversation, membership=member(bob, conversation),
                 text="@agent and me", client_id="c")
    follow_up = run_finish(Run.objects.get(conversation=conversation).pk, RunStatus.COMPLETED)
    assert follow_up is not None and follow_up.started_by_id == bob.pk


def test_stopping_a_queued_run_ends_it_at_once(alice, bob, conversation) -> None:
    message_post(conversation=conversation, membership=member(alice, conversation), text="go",
                 client_id="a")
    run = run_stop(conversation=conversation, membership=member(bob, conversation))
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.stopped_by_id == bob.pk
    logged = list(ConversationEvent.objects.filter(kind__in=["run_stopping", "run_ended"])
                  .order_by("seq").values_list("kind", "payload"))
    bob_person = {"id": bob.pk, "name": "Bob"}
    assert logged == [  # the room sees it end too: no worker will
        ("run_stopping", {"kind": "run_stopping", "run_id": run.pk, "by": bob_person}),
        ("run_ended", {"kind": "run_ended", "status": "cancelled", "error_kind": None,
                       "turns": 0, "stopped_by": bob_person})]
    with pytest.raises(ApplicationError) as again:
        run_stop(conversation=conversation, membership=member(alice, conversation))
    assert again.value.code == ErrorCode.CONFLICT


def test_stopping_a_queued_run_starts_no_other_for_the_messages_that_wait(
        alice, bob, conversation) -> None:
    message_post(conversation=conversation, membership=member(alice, conversation), text="go",
                 client_id="a")
    message_post(conversation=conversation, membership=member(bob, conversation), text="me too",
                 client_id="b")  # waits for the run
    run_stop(conversation=conversation, membership=member(alice, conversation))
    assert list(Run.objects.filter(conversation=conversation).values_list("status", flat=True)
                ) == [RunStatus.CANCELLED]  # a run for Bob's message would undo the stop
    waited = Message.objects.get(client_id="b")  # in the history, in order, unanswered
    assert waited.status == MessageStatus.COMPLETE
    assert waited.position == Message.objects.get(client_id="a").position + 1
    assert ConversationEvent.objects.filter(kind="messages_injected").count() == 1
    with pytest.raises(ApplicationError):
        run_stop(conversation=conversation, membership=member(alice, conversation))


async def test_a_stop_that_read_the_run_queued_leaves_it_to_the_worker_that_claimed_it(
        alice, conversation) -> None:
    await sync_to_async(message_post)(conversation=conversation, text="go", client_id="a",
                                      membership=await sync_to_async(member)(alice, conversation))
    run = await Run.objects.aget(conversation=conversation)
    layer = get_channel_layer()
    host = await layer.new_channel()  # the run's worker, as it listens
    await layer.group_add(run_group(run.pk), host)

    def claimed_meanwhile(sender: type[Run], instance: Run, update_fields: Any, **_: Any
                          ) -> None:  # between the stop's read and its end: a worker claims it
        if update_fields == {"stopped_by"}:
            assert run_claim(instance.pk, "worker-1")

    post_save.connect(claimed_meanwhile, sender=Run)
    try:
        await sync_to_async(run_stop)(
            conversation=conversation, membership=await sync_to_async(member)(alice, conversation))
    finally:
        post_save.disconnect(claimed_meanwhile, sender=Run)
    asked = await asyncio.wait_for(layer.receive(host), 10)  # its worker is asked instead
    assert (asked["type"], asked["stopped_by"]["name"]) == ("run.stop", "Alice")
    assert (await Run.objects.aget(pk=run.pk)).status == RunStatus.RUNNING  # still the worker's
    assert not await ConversationEvent.objects.filter(kind="run_ended").aexists()


async def test_a_decision_for_a_run_whose_stop_was_lost_asks_its_worker_again(
        alice, bob, conversation) -> None:
    await sync_to_async(message_post)(conversation=conversation, text="go", client_id="a",
                                      membership=await sync_to_async(member)(alice, conversation))
    run = await Run.objects.aget(conversation=conversation)
    await Run.objects.filter(pk=run.pk).aupdate(status=RunStatus.RUNNING, stopped_by=bob)
    layer = get_channel_layer()
    host = await layer.new_channel()  # the run's worker, which never heard the stop
    await layer.group_add(run_group(run.pk), host)
    with pytest.raises(ApplicationError) as refused:
        await sync_to_async(run_decide)(
            conversation=conversation, membership=await sync_to_async(member)(alice, conversation),
            tool_call_id="toolu_1", approve=True)
    assert refused.value.code == ErrorCode.CONFLICT
    asked = await asyncio.wait_for(layer.receive(host), 10)
    assert (asked["type"], asked["stopped_by"]["name"]) == ("run.stop", "Bob")


@override_settings(CONFAB={**__import__("django.conf").conf.settings.CONFAB,
                           "STALE_AFTER_S": 30, "CLAIM_TIMEOUT_S": 20, "MAX_DISPATCHES": 2})
def test_the_sweeper_interrupts_silent_runs_and_redispatches_unclaimed_ones(
        alice, conversation, acme) -> None:
    message_post(conversation=conversation, membership=member(alice, conversation), text="go",
                 client_id="a")
    run = Run.objects.get(conversation=conversation)
    old = timezone.now() - timedelta(minutes=5)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, heartbeat_at=old)
    Message.objects.create(conversation=conversation, run=run, role="assistant",
                           status="streaming", content=[
                               {"type": "text", "text": "half"},
                               {"type": "tool_use", "name": "Bash", "partial_arguments": "{"}])
    assert runs_sweep() == [run.pk]
    run.refresh_from_db()
    assert run.status == RunStatus.INTERRUPTED
    kept = Message.objects.get(conversation=conversation, role="assistant")
    assert kept.status == "error" and kept.content[0]["text"] == "half"  # nothing lost
    first = Message.objects.get(conversation=conversation, role="user")
    assert kept.position == first.position + 1  # in its place, not at the end for ever
    ended = ConversationEvent.objects.filter(kind="run_ended").get()
    assert ended.payload["status"] == "interrupted" and ended.payload["stopped_by"] is None

    other = Conversation.objects.create(room=conversation.room, title="u")
    queued = Run.objects.create(conversation=other, status=RunStatus.QUEUED, dispatches=1)
    Run.objects.filter(pk=queued.pk).update(updated_at=old)
    assert runs_sweep() == [queued.pk]
    queued.refresh_from_db()
    assert queued.status == RunStatus.QUEUED and queued.dispatches == 2
    Run.objects.filter(pk=queued.pk).update(updated_at=old)
    runs_sweep()
    queued.refresh_from_db()
    assert queued.status == RunStatus.FAILED and queued.error_kind == "unclaimed"


def test_the_sweeper_names_who_stopped_a_run_that_stopped_while_it_swept(alice, conversation
                                                                         ) -> None:
    message_post(conversation=conversation, membership=member(alice, conversation), text="go",
                 client_id="a")
    Run.objects.filter(conversation=conversation).update(status=RunStatus.RUNNING)
    swept = Run.objects.get(conversation=conversation)  # the sweeper's read: nobody stopped it
    run_stop(conversation=conversation, membership=member(alice, conversation))
    _interrupt(swept)
    ended = ConversationEvent.objects.filter(kind="run_ended").get()
    assert ended.payload["stopped_by"] == {"id": alice.pk, "name": "Alice"}


def test_an_interrupted_reply_joins_the_history_the_next_run_sends(alice, conversation) -> None:
    from apps.rooms.transcript import history_of

    message_post(conversation=conversation, membership=member(alice, conversation), text="go",
                 client_id="a")
    run = Run.objects.get(conversation=conversation)
    Message.objects.create(conversation=conversation, run=run, role="assistant",
                           status="streaming", content=[
                               {"type": "thinking", "thinking": "hmm"},
                               {"type": "text", "text": "half an ans"},
                               {"type": "tool_use", "name": "Bash", "partial_arguments": "{"}])
    run_finish(run.pk, RunStatus.INTERRUPTED)
    history = history_of(conversation.pk)
    assert [m.role for m in history] == ["user", "assistant"]
    assert [b.type for b in history[1].content] == ["thinking", "text"]
    assert history[1].status == "error"


def test_a_runs_setup_reads_the_run_before_it_and_whether_a_message_waits(
        conversation: Conversation, alice: User) -> None:
    """The host's setup annotations (issue 20): the conversation's run with the highest id
    below the run's (another conversation's runs in between do not count), and whether a
    message of the conversation (not another's) is pending."""
    other = Conversation.objects.create(room=conversation.room, title="o")
    first = Run.objects.create(conversation=conversation, status=RunStatus.COMPLETED)
    second = Run.objects.create(conversation=conversation, status=RunStatus.FAILED)
    between = Run.objects.create(conversation=other, status=RunStatus.QUEUED)
    third = Run.objects.create(conversation=conversation, status=RunStatus.QUEUED)
    Message.objects.create(conversation=other, role="user", author=alice, content=[],
                           status=MessageStatus.PENDING)

    def read(run: Run) -> tuple[int | None, bool]:  # the one query, built once, as the host
        row = _setup_runs().get(pk=run.pk)
        return row.previous_run, row.messages_waiting

    assert read(first) == (None, False)
    assert read(second) == (first.pk, False)
    assert read(third) == (second.pk, False)
    assert read(between) == (None, True)
    Message.objects.create(conversation=conversation, role="user", author=alice, content=[],
                           status=MessageStatus.COMPLETE)
    assert read(third) == (second.pk, False)
    Message.objects.create(conversation=conversation, role="user", author=alice, content=[],
                           status=MessageStatus.PENDING)
    assert read(third) == (second.pk, True)


@override_settings(CONFAB={**__import__("django.conf").conf.settings.CONFAB,
                           "STALE_AFTER_S": 30})
async def test_the_sweepers_broadcasts_leave_from_the_loop_not_the_database_thread(
        alice, conversation, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database thread waiting on the loop (``async_to_sync``) hung a process stopped
    mid-sweep: its shutdown joined the thread, whose loop had stopped."""
    @sync_to_async
    def silent_run() -> None:  # its worker died: the sweep ends it
        message_post(conversation=conversation, membership=member(alice, conversation),
                     text="go", client_id="a")
        Run.objects.filter(conversation=conversation).update(
            status=RunStatus.RUNNING, heartbeat_at=timezone.now() - timedelta(minutes=5))

    await silent_run()
    waits: list[str] = []
    wait = AsyncToSync.__call__

    def waited(self: AsyncToSync, *args: object, **kwargs: object) -> object:
        waits.append(getattr(self.awaitable, "__qualname__", "?"))
        return wait(self, *args, **kwargs)

    monkeypatch.setattr(AsyncToSync, "__call__", waited)
    layer = broadcast_layer()
    channel = await layer.new_channel()
    await layer.group_add(conversation_group(conversation.pk), channel)
    sweeping = asyncio.create_task(sweep_forever())  # sweeps first, then sleeps
    try:
        heard = await asyncio.wait_for(layer.receive(channel), 10)
    finally:
        sweeping.cancel()
    assert heard["kind"] == "run_ended"  # broadcast, and after its commit
    assert waits == []
