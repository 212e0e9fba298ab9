"""Broadcasts after commit from database work called through ``database_call`` (issue 22): the
commit hooks' messages wait in an outbox and leave from the event loop once the call returns,
so the database thread never waits for the loop; in order per destination, nothing from a
rolled-back transaction, everything a committed one queued even when the call then raises.
Sync code called any other way still sends at once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers, get_channel_layer
from django.db import transaction

from apps.realtime import publish
from apps.realtime.publish import database_call, group_send_on_commit, send_on_commit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> None:
    """A new in-memory layer per test: its queues belong to the test's event loop."""
    channel_layers.backends.clear()


async def joined(group: str) -> str:
    """A new channel of the default layer, in ``group``."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    return channel


async def heard(channel: str, count: int) -> list[dict[str, Any]]:
    layer = get_channel_layer()
    return [await asyncio.wait_for(layer.receive(channel), 5) for _ in range(count)]


def no_waiting_on_the_loop(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a commit hook waited for the event loop")


async def test_a_calls_commit_hooks_send_from_the_loop_once_it_returns_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    group = await joined("g")
    direct = await get_channel_layer().new_channel()
    monkeypatch.setattr(publish, "async_to_sync", no_waiting_on_the_loop)

    def work() -> str:
        with transaction.atomic():
            group_send_on_commit("g", {"type": "x", "n": 1})
            send_on_commit(direct, {"type": "y", "n": 1})
            group_send_on_commit("g", {"type": "x", "n": 2})
        with transaction.atomic():
            group_send_on_commit("g", {"type": "x", "n": 3})
        return "done"

    assert await database_call(work) == "done"
    assert [m["n"] for m in await heard(group, 3)] == [1, 2, 3]
    assert [m["n"] for m in await heard(direct, 1)] == [1]


async def test_a_rolled_back_transaction_sends_nothing_and_a_committed_one_sends_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    group = await joined("g")
    monkeypatch.setattr(publish, "async_to_sync", no_waiting_on_the_loop)

    def work() -> None:
        with transaction.atomic():
            group_send_on_commit("g", {"type": "x", "n": 1})
        try:
            with transaction.atomic():
                group_send_on_commit("g", {"type": "x", "n": 2})
                raise ValueError("rolled back")
        except ValueError:
            pass
        raise LookupError("after the commit")

    with pytest.raises(LookupError):
        await database_call(work)
    assert [m["n"] for m in await heard(group, 1)] == [1]
    layer = get_channel_layer()
    with pytest.raises(TimeoutError):  # the rolled-back one never comes
        await asyncio.wait_for(layer.receive(group), 0.2)


async def test_sync_code_called_otherwise_sends_at_once() -> None:
    group = await joined("g")

    def work() -> None:  # e.g. a view: no outbox, the send happens in the hook
        with transaction.atomic():
            group_send_on_commit("g", {"type": "x", "n": 1})

    await sync_to_async(work)()
    assert [m["n"] for m in await heard(group, 1)] == [1]


class FailingLayer:
    """A channel layer that records what it is sent and fails on ``{"fail": True}``."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int]] = []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if message.get("fail"):
            raise RuntimeError("refused")
        self.sent.append((group, message["n"]))

    send = group_send


async def test_a_failed_send_stops_its_destination_and_is_raised_a_robust_one_is_logged(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    layer, other = FailingLayer(), FailingLayer()
    layers = {"default": layer, "other": other}
    monkeypatch.setattr(publish, "get_channel_layer", lambda alias: layers[alias])

    def work() -> None:
        with transaction.atomic():
            publish.publish("group_send", "room", {"fail": True}, robust=True)
            publish.publish("group_send", "room", {"n": 1}, robust=True)
            group_send_on_commit("a", {"n": 1})
            group_send_on_commit("a", {"fail": True})
            group_send_on_commit("a", {"n": 2})
            group_send_on_commit("b", {"n": 1})
            transaction.on_commit(lambda: publish.publish("group_send", "a", {"n": 9},
                                                          layer="other"))

    with (caplog.at_level(logging.ERROR, logger="apps.realtime.publish"),
          pytest.raises(RuntimeError, match="refused")):
        await database_call(work)
    # "a" stops at its failure; "b" and the robust "room" go on
    assert sorted(layer.sent) == [("a", 1), ("b", 1), ("room", 1)]
    assert other.sent == [("a", 9)]  # another layer's group "a" is another destination
    assert "a broadcast to room failed" in caplog.text


class BatchingLayer(FailingLayer):
    """A layer with ``group_send_many`` (the broadcast layer on Redis): records each call's
    messages; its one-by-one ``group_send`` must not be used."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[tuple[str, int]]] = []

    async def group_send_many(self, sends: list[tuple[str, dict[str, Any]]]) -> None:
        if any(message.get("fail") for _, message in sends):
            raise RuntimeError("refused")
        self.batches.append([(group, message["n"]) for group, message in sends])

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        raise AssertionError("a group message of a batching layer was sent alone")


async def test_a_calls_group_messages_on_a_batching_layer_leave_in_one_round_trip(
        monkeypatch: pytest.MonkeyPatch) -> None:
    default, broadcast = FailingLayer(), BatchingLayer()
    layers = {"default": default, "broadcast": broadcast}
    monkeypatch.setattr(publish, "get_channel_layer", lambda alias: layers[alias])

    def work() -> None:
        with transaction.atomic():
            for group, n in (("a", 1), ("b", 1), ("a", 2)):
                transaction.on_commit(lambda g=group, n=n: publish.publish(
                    "group_send", g, {"n": n}, layer="broadcast"))
            send_on_commit("worker", {"n": 1})  # the default layer: one by one
            transaction.on_commit(lambda: publish.publish(
                "group_send", "room", {"n": 1}, robust=True, layer="broadcast"))

    await database_call(work)
    # the events in one round trip, the robust one (a sidebar's) in one of its own
    assert broadcast.batches == [[("a", 1), ("b", 1), ("a", 2)], [("room", 1)]]
    assert default.sent == [("worker", 1)]


async def test_a_failed_batch_is_raised_unless_its_messages_are_robust(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Robust messages (a room's sidebar) travel in a batch of their own: their failure is
    logged and the others (a conversation's events) still go; a failure of those is raised."""
    broadcast = BatchingLayer()
    monkeypatch.setattr(publish, "get_channel_layer", lambda alias: broadcast)

    def work(failing_robust: bool) -> None:
        with transaction.atomic():
            transaction.on_commit(lambda: publish.publish(
                "group_send", "conv", {"n": 1} if failing_robust else {"fail": True},
                layer="broadcast"))
            transaction.on_commit(lambda: publish.publish(
                "group_send", "room", {"fail": True} if failing_robust else {"n": 1},
                robust=True, layer="broadcast"))

    with caplog.at_level(logging.ERROR, logger="apps.realtime.publish"):
        await database_call(work, True)
    assert broadcast.batches == [[("conv", 1)]]
    assert "a broadcast to room failed" in caplog.text
    with pytest.raises(RuntimeError, match="refused"):
        await database_call(work, False)
    assert broadcast.batches[1:] == [[("room", 1)]]  # the robust one still went


async def test_a_destination_with_robust_and_other_messages_keeps_their_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    default, broadcast = FailingLayer(), BatchingLayer()
    broadcast.group_send = default.group_send  # type: ignore[method-assign]  # one by one
    monkeypatch.setattr(publish, "get_channel_layer", lambda alias: broadcast)

    def work() -> None:
        with transaction.atomic():
            for n, robust in ((1, False), (2, True), (3, False)):
                transaction.on_commit(lambda n=n, r=robust: publish.publish(
                    "group_send", "room", {"n": n}, robust=r, layer="broadcast"))

    await database_call(work)
    assert default.sent == [("room", 1), ("room", 2), ("room", 3)]
    assert broadcast.batches == []


async def test_a_layer_that_cannot_be_had_fails_only_its_messages(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    default = FailingLayer()

    def layer(alias: str) -> Any:
        if alias == "broken":
            raise RuntimeError("no such backend")
        return default

    monkeypatch.setattr(publish, "get_channel_layer", layer)

    def work() -> None:
        with transaction.atomic():
            transaction.on_commit(lambda: publish.publish(
                "group_send", "room", {"n": 1}, robust=True, layer="broken"))
            group_send_on_commit("conv", {"n": 1})

    with caplog.at_level(logging.ERROR, logger="apps.realtime.publish"):
        await database_call(work)
    assert default.sent == [("conv", 1)]
    assert "a broadcast to room failed" in caplog.text
