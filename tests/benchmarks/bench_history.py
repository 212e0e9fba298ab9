"""History that does not slow a room (issue 21): what a connect costs as a conversation grows.

Run with ``make bench`` or ``.venv/bin/python -m tests.benchmarks.bench_history``. It builds, in
a fresh SQLite database, conversations of 10, 1,000 and 10,000 messages (each exchange: a
question, a tool call, its result of ~400 characters, an answer), then connects real sockets
(the ASGI application in this process, ``WebsocketCommunicator``, token auth) and prints per
size, median over the runs:

- connect: from the socket's connect to its ``state`` frame, in ms, and the frame's size;
- paging: 1,000 messages back with ``history`` frames (time per 1,000 messages, from the newest
  and from the middle of the 10,000: linear means both the same);
- reconnect: ``?after_seq=`` after 50,000 missed events (a fresh ``state`` past
  ``CONFAB_REPLAY_MAX_EVENTS``) next to a fresh connect, and what replaying them costs.

Goals: a 10,000-message conversation connects with a ``state`` frame under 64 KB in under
100 ms, like one of 10; a reconnect after 50,000 missed events costs what a connect costs.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("CONFAB_DATA_DIR", tempfile.mkdtemp(prefix="confab-bench-history-"))

import django

django.setup()

from asgiref.sync import sync_to_async  # noqa: E402
from channels.testing import WebsocketCommunicator  # noqa: E402
from django.core.management import call_command  # noqa: E402

from apps.accounts.models import Membership, Role, Team, User  # noqa: E402
from apps.accounts.services import api_token_create  # noqa: E402
from apps.rooms.models import Conversation, ConversationEvent, Message, Room  # noqa: E402
from apps.rooms.services.events import events_after  # noqa: E402
from config.asgi import application  # noqa: E402

SIZES = (10, 1_000, 10_000)
RUNS = 15
MISSED = 50_000
RESULT = "line of the file that was read, with some words in it\n" * 7


def build(team: Team, alice: User, messages: int) -> Conversation:
    room = Room.objects.create(team=team, name=f"Room {messages}", created_by=alice)
    conversation = Conversation.objects.create(room=room, title=f"{messages} messages",
                                               created_by=alice)
    rows = []
    for n in range(messages // 4 or 1):
        for role, content in (
                ("user", [{"type": "text", "text": f"question {n}: what is in file {n}?"}]),
                ("assistant", [{"type": "text", "text": "Let me read it."},
                               {"type": "tool_use", "id": f"c{n}", "name": "Read",
                                "input": {"file_path": f"src/file_{n}.py"}}]),
                ("user", [{"type": "tool_result", "tool_use_id": f"c{n}", "content": RESULT,
                           "is_error": False}]),
                ("assistant", [{"type": "text", "text": f"File {n} holds seven lines."}])):
            rows.append(Message(conversation=conversation, role=role, position=len(rows) + 1,
                                content=content, author=alice if role == "user" else None,
                                author_name="Alice" if role == "user" else ""))
    Message.objects.bulk_create(rows[:messages], batch_size=2_000)
    return conversation


def miss_events(conversation: Conversation, count: int) -> int:
    """``count`` logged deltas nobody saw; returns the seq before them."""
    start = conversation.last_seq
    ConversationEvent.objects.bulk_create(
        [ConversationEvent(conversation=conversation, seq=start + i + 1, kind="text_delta",
                           payload={"kind": "text_delta", "message_id": "m", "delta": "word "})
         for i in range(count)], batch_size=5_000)
    Conversation.objects.filter(pk=conversation.pk).update(last_seq=start + count)
    return start


async def connect(token: str, conversation_id: int, query: str = "") -> tuple[float, dict,
                                                                              WebsocketCommunicator]:
    path = f"/ws/conversations/{conversation_id}/{query}"
    socket = WebsocketCommunicator(application, path,
                                   headers=[(b"authorization", f"Bearer {token}".encode())])
    began = time.perf_counter()
    connected, _ = await socket.connect(timeout=30)
    assert connected
    frame = await socket.receive_json_from(timeout=30)
    return (time.perf_counter() - began) * 1000, frame, socket


async def state_once(token: str, conversation_id: int, query: str = "") -> tuple[float, int]:
    elapsed, frame, socket = await connect(token, conversation_id, query)
    assert frame["type"] == "state", frame["type"]
    await socket.disconnect()
    return elapsed, len(json.dumps(frame))


async def page_back(token: str, conversation_id: int, messages: int,
                    skip: int = 0) -> float:
    """ms to page ``messages`` messages back with history frames, after skipping ``skip``."""
    _, state, socket = await connect(token, conversation_id)
    before, seen, began = state["before"], 0, None
    while before is not None and seen < skip + messages:
        if began is None and seen >= skip:
            began = time.perf_counter()
        await socket.send_json_to({"type": "history", "before": before})
        page = await socket.receive_json_from(timeout=30)
        while page["type"] != "history":  # presence frames come and go
            page = await socket.receive_json_from(timeout=30)
        seen += len(page["messages"])
        before = page["before"]
    await socket.disconnect()
    return (time.perf_counter() - (began or time.perf_counter())) * 1000


def median(values: list[float]) -> float:
    return statistics.median(values)


async def main() -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)
    alice = await sync_to_async(User.objects.create_user)(username="alice", password="x" * 12,
                                                          display_name="Alice")
    team = await Team.objects.acreate(name="Bench", slug="bench")
    await Membership.objects.acreate(team=team, user=alice, role=Role.OWNER)
    token = (await sync_to_async(api_token_create)(user=alice, name="bench"))[1]
    rows = []
    conversations = {}
    for size in SIZES:
        conversations[size] = conversation = await sync_to_async(build)(team, alice, size)
        await state_once(token, conversation.pk)  # warm
        runs = [await state_once(token, conversation.pk) for _ in range(RUNS)]
        rows.append((size, median([r[0] for r in runs]), runs[0][1]))
    print(f"{'messages':>9} {'connect ms':>11} {'state KB':>9}")
    for size, ms, size_bytes in rows:
        print(f"{size:>9,} {ms:>11.1f} {size_bytes / 1024:>9.1f}")
    big = conversations[10_000].pk
    newest = median([await page_back(token, big, 1_000) for _ in range(5)])
    middle = median([await page_back(token, big, 1_000, skip=5_000) for _ in range(5)])
    print(f"paging 1,000 messages back: {newest:.1f} ms from the newest, "
          f"{middle:.1f} ms from the middle (ratio {middle / newest:.2f})")
    small = conversations[10]
    after = await sync_to_async(miss_events)(small, MISSED)
    fresh = median([(await state_once(token, small.pk))[0] for _ in range(RUNS)])
    behind = median([(await state_once(token, small.pk, f"?after_seq={after}"))[0]
                     for _ in range(RUNS)])
    began = time.perf_counter()
    replayed, seq = 0, after
    while batch := await sync_to_async(events_after)(small.pk, seq, 500):
        replayed += len(batch)
        seq = batch[-1].seq
        json.dumps([row.payload for row in batch])
    replay_ms = (time.perf_counter() - began) * 1000
    print(f"reconnect after {MISSED:,} missed events: {behind:.1f} ms (fresh connect "
          f"{fresh:.1f} ms, ratio {behind / fresh:.2f}); replaying them would read and "
          f"encode {replayed:,} events in {replay_ms:.0f} ms")
    ok = all(ms < 100 and size_bytes < 64 * 1024 for _, ms, size_bytes in rows)
    print(f"Goal (state < 64 KB in < 100 ms at every size): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main())
