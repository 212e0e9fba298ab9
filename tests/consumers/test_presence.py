"""Presence is coalesced and typing throttled per socket (DESIGN 3.3, issue 20): a join storm
gives each watcher one presence frame per interval instead of one per join, joiners still
learn who was there, and a client sending typing in a loop is relayed once per interval. Time
is a :class:`FakeClock` the test advances."""

from __future__ import annotations

import pytest
from django.db.backends.utils import CursorWrapper

from apps.accounts.models import User
from apps.rooms.consumers import ConversationConsumer
from apps.rooms.presence import Throttle
from tests.consumers.conftest import Client, connect
from tests.consumers.fake_clock import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)

INTERVAL = 0.2  # PRESENCE_INTERVAL_S
TYPING = 2.0  # TYPING_INTERVAL_S
QUIET = 0.3  # real seconds a socket must stay silent to count as sending nothing


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    clock = FakeClock()
    monkeypatch.setattr(ConversationConsumer, "clock", clock)
    return clock


@pytest.fixture(autouse=True)
def intervals(settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "PRESENCE_INTERVAL_S": INTERVAL,
                       "TYPING_INTERVAL_S": TYPING, "TAIL_CHECK_S": 3600.0}


def names(frame: dict) -> list[str]:
    return [p["name"] for p in frame.get("present", [])]


async def join(user: User, conversation_id: int) -> Client:
    """Connect and read the state frame and the socket's first presence frame (kept as
    ``client.first_presence``)."""
    client, state = await connect(user, conversation_id)
    assert state["type"] == "state"
    client.first_presence = await client.frame()  # type: ignore[attr-defined]
    assert client.first_presence["type"] == "presence"  # the first one goes out at once
    return client


def test_a_throttle_allows_one_go_per_interval() -> None:
    clock = FakeClock()
    throttle = Throttle(clock, 2.0)
    assert throttle.ready() and not throttle.ready()
    clock.advance(1.5)
    assert throttle.wait_s() == pytest.approx(0.5) and not throttle.ready()
    clock.advance(0.5)
    assert throttle.ready()


async def test_a_join_storm_gives_each_watcher_one_frame_per_interval(
        alice: User, bob: User, carol: User, conversation, clock: FakeClock) -> None:
    first = await join(alice, conversation.pk)
    storm = [await join(person, conversation.pk) for person in (bob, carol, bob, carol, bob)]
    assert await first.ws.receive_nothing(timeout=QUIET)  # held back: the interval is not over
    clock.advance(INTERVAL)
    gathered = await first.frame()
    assert names(gathered) == ["Alice", "Bob", "Carol"]
    assert await first.ws.receive_nothing(timeout=QUIET)  # one frame for five joins
    for _ in range(2):  # the answers to the joins are throttled too: a joiner may need two
        clock.advance(INTERVAL)
        assert await first.ws.receive_nothing(timeout=QUIET)  # answers to answers: none
    everyone = ["Alice", "Bob", "Carol"]
    for client in storm:  # every joiner knows who is there: at once, or at the interval's end
        if names(client.first_presence) != everyone:
            await client.until(lambda f: names(f) == everyone)
        assert await client.ws.receive_nothing(timeout=0.05)
    for client in (first, *storm):
        await client.close()


async def test_leaves_within_an_interval_are_one_frame(
        alice: User, bob: User, carol: User, conversation, clock: FakeClock) -> None:
    first = await join(alice, conversation.pk)
    others = [await join(person, conversation.pk) for person in (bob, carol)]
    assert await first.ws.receive_nothing(timeout=QUIET)
    clock.advance(INTERVAL)
    assert names(await first.frame()) == ["Alice", "Bob", "Carol"]  # the interval starts anew
    for client in others:
        await client.close()
    assert await first.ws.receive_nothing(timeout=QUIET)
    clock.advance(INTERVAL)
    assert names(await first.frame()) == ["Alice"]
    await first.close()


async def test_typing_is_relayed_once_per_interval(
        alice: User, bob: User, conversation, clock: FakeClock) -> None:
    watcher = await join(bob, conversation.pk)
    typist = await join(alice, conversation.pk)
    clock.advance(INTERVAL)
    await watcher.until(lambda f: len(f.get("present", [])) == 2)
    for _ in range(5):
        await typist.send({"type": "typing"})
    typing = await watcher.until(lambda f: "typing" in f)
    assert typing["typing"]["id"] == alice.pk
    assert await watcher.ws.receive_nothing(timeout=QUIET)  # the other four were dropped
    clock.advance(TYPING)
    await typist.send({"type": "typing"})
    assert "typing" in await watcher.until(lambda f: "typing" in f)
    await watcher.close()
    await typist.close()


async def test_a_throttled_typing_frame_costs_no_database_work(
        alice: User, conversation, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A typing flood must not queue database work ahead of the socket's own next frame (the
    chaos suite's typing flood: a send acknowledged 26 s after 2,000 typing frames). Every
    query of every thread is counted (passed through, not replaced)."""
    typist = await join(alice, conversation.pk)
    await typist.send({"type": "typing"})  # the one relayed this interval
    seen: list[str] = []
    execute = CursorWrapper._execute

    def counted(self, sql, *args):
        seen.append(sql)
        return execute(self, sql, *args)

    async def queries_of(frames: list[dict]) -> int:
        seen.clear()
        for frame in frames:
            await typist.send(frame)
        await typist.until(lambda f: f.get("type") == "error")  # the cursor's: all were read
        return len(seen)

    monkeypatch.setattr(CursorWrapper, "_execute", counted)
    bad_cursor = {"type": "history", "before": "nonsense"}
    await queries_of([bad_cursor])  # the first frame's one-time lookups
    alone = await queries_of([bad_cursor])
    after_flood = await queries_of([{"type": "typing"}] * 50 + [bad_cursor])
    assert alone > 0  # the consumer's queries are seen here
    assert after_flood == alone
    await typist.close()
