"""A group's broadcasts reach a process once and its sockets from there; presence is kept per
process (issue 20: capacity). Two :class:`ConversationFanout` on one layer stand for two socket
servers: each joins the group with its own channel, as two Daphne processes do. Time is a
:class:`FakeClock` the test advances."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from channels.layers import InMemoryChannelLayer

from apps.realtime.groups import conversation_group
from apps.rooms.fanout import ConversationFanout, Fanouts, RoomFanout
from tests.consumers.fake_clock import FakeClock

INTERVAL = 0.2
GROUP = conversation_group(7)
ALICE, BOB, CAROL = ({"id": i, "name": n} for i, n in ((1, "Alice"), (2, "Bob"), (3, "Carol")))


class Socket:
    """A watcher that keeps what it was given."""

    def __init__(self, name: str) -> None:
        self.channel_name = name
        self.got: list[dict[str, Any]] = []
        self.closed = False

    def deliver(self, message: dict[str, Any]) -> None:
        self.got.append(message)

    async def deliver_at_once(self, message: dict[str, Any]) -> bool:
        return False  # busy: everything is queued (deliver)

    def lost(self) -> None:
        self.closed = True

    def frames(self) -> list[dict[str, Any]]:
        return [json.loads(m["text"]) for m in self.got if m["type"] == "local.frame"]

    def shown(self) -> list[str]:
        present = [f for f in self.frames() if "present" in f]
        return [p["name"] for p in present[-1]["present"]] if present else []


async def settle() -> None:
    """Let the layer's and the fanouts' tasks run (no time passes on the fake clock)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def opened(layer: Any, clock: FakeClock, kind: type = ConversationFanout,
                 group: str = GROUP) -> Any:
    fanout = kind(layer, group, clock=clock, interval_s=INTERVAL)
    await fanout.channel.open()
    return fanout


async def spy(layer: Any, group: str = GROUP) -> tuple[str, list[dict[str, Any]]]:
    """A channel in the group whose messages are collected (what crosses the layer)."""
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    seen: list[dict[str, Any]] = []

    async def read() -> None:
        while True:
            seen.append(await layer.receive(channel))

    asyncio.get_running_loop().create_task(read())
    return channel, seen


async def test_a_group_message_reaches_the_process_once_and_each_socket_once() -> None:
    layer, clock = InMemoryChannelLayer(), FakeClock()
    fanout = await opened(layer, clock)
    sockets = [Socket(f"s{i}") for i in range(5)]
    for socket in sockets:
        fanout.add(socket, ALICE)
    envelope = {"type": "conv.event", "seq": 1, "kind": "text_delta", "frame": '{"seq": 1}'}
    await layer.group_send(GROUP, envelope)
    await settle()
    assert layer.groups[GROUP].keys() == {fanout.channel.channel}  # one channel per process
    for socket in sockets:
        assert [m for m in socket.got if m["type"] == "conv.event"] == [envelope]
    await fanout.close()


class IdleSocket(Socket):
    """A watcher that takes logged events at once (the fanout's task awaits it)."""

    async def deliver_at_once(self, message: dict[str, Any]) -> bool:
        if message["type"] != "conv.event":
            return False
        self.got.append({**message, "at_once": True})
        return True


async def test_an_idle_socket_takes_an_event_at_once_and_a_busy_one_queues_it() -> None:
    layer, clock = InMemoryChannelLayer(), FakeClock()
    fanout = await opened(layer, clock)
    idle, busy = IdleSocket("idle"), Socket("busy")
    fanout.add(idle, ALICE)
    fanout.add(busy, BOB)
    envelope = {"type": "conv.event", "seq": 1, "kind": "text_delta", "frame": '{"seq": 1}'}
    await layer.group_send(GROUP, envelope)
    await settle()
    assert [m for m in idle.got if m["type"] == "conv.event"] == [{**envelope, "at_once": True}]
    assert [m for m in busy.got if m["type"] == "conv.event"] == [envelope]
    await fanout.close()


async def test_two_processes_learn_each_others_people_with_a_message_each_per_interval() -> None:
    layer, clock = InMemoryChannelLayer(), FakeClock()
    _, crossed = await spy(layer)
    one, two = await opened(layer, clock), await opened(layer, clock)
    first = Socket("a")
    one.add(first, ALICE)
    await settle()
    storm = [Socket(f"b{i}") for i in range(50)]
    for i, socket in enumerate(storm):  # 50 sockets join the other process at once
        two.add(socket, BOB if i % 2 else CAROL)
    await settle()
    for _ in range(3):
        clock.advance(INTERVAL)
        await settle()
    assert first.shown() == ["Alice", "Bob", "Carol"]
    assert all(socket.shown() == ["Alice", "Bob", "Carol"] for socket in storm)
    lists = [m for m in crossed if m["type"] == "presence.list"]
    # one's first list (asking), two's first list (asking) and two's answer to one, one's
    # answer to two, and two's list gathering the storm: a handful, not one per socket
    assert len(lists) <= 6, lists
    assert len(first.frames()) <= 3  # the storm is one frame per interval for a watcher

    for socket in storm:
        two.remove(socket)
    await two.close()
    await settle()
    clock.advance(INTERVAL)
    await settle()
    assert first.shown() == ["Alice"]  # the closed process said it has nobody left
    await one.close()


async def test_typing_goes_to_every_socket_of_the_process_as_one_text() -> None:
    layer, clock = InMemoryChannelLayer(), FakeClock()
    fanout = await opened(layer, clock)
    sockets = [Socket("a"), Socket("b")]
    for socket in sockets:
        fanout.add(socket, ALICE)
    await layer.group_send(GROUP, {"type": "presence.typing", "user": BOB})
    await settle()
    for socket in sockets:
        assert socket.frames()[-1] == {"type": "presence", "typing": BOB}
    await fanout.close()


async def test_the_room_shows_presence_only_to_sockets_that_show_the_sidebar() -> None:
    layer, clock = InMemoryChannelLayer(), FakeClock()
    room = await opened(layer, clock, RoomFanout, "room.3")
    script, page = Socket("script"), Socket("page")
    room.add(script, {**ALICE, "conversation_id": 7})
    room.add(page, {**BOB, "conversation_id": 8})
    assert script.frames() == page.frames() == []
    room.subscribe(page)
    assert page.frames() == [{"type": "sidebar_presence", "present": {
        "7": [{"id": 1, "name": "Alice"}], "8": [{"id": 2, "name": "Bob"}]}}]
    await room.close()


async def test_a_failed_layer_closes_the_sockets_and_the_next_watch_opens_anew() -> None:
    class Failing(InMemoryChannelLayer):
        fail = True

        async def receive(self, channel: str) -> dict[str, Any]:
            if self.fail:
                raise ConnectionError("Redis went away")
            return await super().receive(channel)

    layer, clock = Failing(), FakeClock()
    registry = Fanouts()
    socket = Socket("a")
    def make() -> ConversationFanout:
        return ConversationFanout(layer, GROUP, clock=clock, interval_s=INTERVAL)

    fanout = await registry.watch(GROUP, make, socket, ALICE)
    await settle()
    assert socket.closed and fanout.closed
    layer.fail = False
    again = await registry.watch(GROUP, make, Socket("b"), BOB)
    assert again is not fanout and not again.closed
    await registry.unwatch(fanout, socket)
    await registry.unwatch(again, again.watchers["b"])
    assert GROUP not in layer.groups  # the last watcher took the process out of the group
