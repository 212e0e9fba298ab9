"""A logged event reaches an idle socket from the fanout's own task (issue 20: a task switch
fewer per frame and socket), and only when nothing can overtake it: not past a gap (the store
fills that, from the socket's task), not while a frame of the client's or an earlier message
is being handled."""

from __future__ import annotations

import asyncio

import pytest

from apps.accounts.models import User
from apps.realtime.event_frame import event_frame
from apps.realtime.groups import conversation_group
from apps.rooms.fanout import fanouts
from tests.consumers.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)


def envelope(seq: int) -> dict:
    event = {"kind": "text_delta", "message_id": "m", "text": f"t{seq}"}
    return {"type": "conv.event", "seq": seq, "kind": "text_delta",
            "frame": event_frame(seq, event)}


async def test_only_the_next_event_to_an_idle_socket_goes_at_once(alice: User,
                                                                   conversation) -> None:
    client, _ = await connect(alice, conversation.pk)
    await client.until(lambda f: f["type"] == "presence")
    fanout = fanouts()._open[conversation_group(conversation.pk)]
    (socket,) = fanout.watchers.values()
    last = socket.last_seq

    assert await socket.deliver_at_once(envelope(last + 1))
    frame = await client.until(lambda f: f["type"] == "event")
    assert (frame["seq"], frame["event"]["text"]) == (last + 1, f"t{last + 1}")
    assert socket.last_seq == last + 1

    assert not await socket.deliver_at_once(envelope(last + 3))  # a gap: the store fills it
    async with socket._turn:  # a client's frame under way: its answer goes first
        assert not await socket.deliver_at_once(envelope(last + 2))
    socket.deliver({"type": "conv.hwm", "seq": last + 1})
    assert not await socket.deliver_at_once(envelope(last + 2))  # behind a queued message
    assert socket.last_seq == last + 1
    await client.close()


async def _promised(lock: asyncio.Lock, release: asyncio.Event) -> asyncio.Task[None]:
    """Hold ``lock``, start a task that waits for it and then holds it until ``release`` (a
    client's frame, or the tail check), and release it: the lock is promised to that task,
    which has not run yet, so ``locked()`` is False although taking it would wait."""
    await lock.acquire()

    async def holder() -> None:
        async with lock:
            await release.wait()

    task = asyncio.create_task(holder())
    await asyncio.sleep(0)  # it waits for the lock
    lock.release()
    return task


@pytest.mark.parametrize("lock_name", ["_turn", "_log_lock"])
async def test_a_lock_promised_to_another_task_keeps_the_event_off_the_fanouts_task(
        alice: User, conversation, lock_name: str) -> None:
    """A frame of the client's (``_turn``) or the tail check (``_log_lock``) woken to take
    its lock but not yet run: the fanout's task must not wait behind it (a frame may read MCP
    resources for seconds, a tail check the store), or every socket of the conversation in
    the process waits as long. It queues the event instead."""
    client, _ = await connect(alice, conversation.pk)
    await client.until(lambda f: f["type"] == "presence")
    fanout = fanouts()._open[conversation_group(conversation.pk)]
    (socket,) = fanout.watchers.values()
    last = socket.last_seq
    release = asyncio.Event()
    holder = await _promised(getattr(socket, lock_name), release)
    try:
        async with asyncio.timeout(1):  # run here, in the window, as the fanout's task would
            assert not await socket.deliver_at_once(envelope(last + 1))
    finally:
        release.set()
        await holder
    await client.close()
