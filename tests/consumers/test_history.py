"""History in pages (issue 21, DESIGN 3.3): the state frame carries the newest page and a
cursor, ``history`` frames and the REST API page back through the rest — every message once,
in order, calls beside their results — and a reconnect that missed too much gets a fresh state
instead of the replay."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client as HttpClient

from apps.accounts.models import User
from apps.rooms.models import Conversation, Message
from apps.rooms.services.events import events_append
from tests.consumers.conftest import Client, connect

pytestmark = pytest.mark.django_db(transaction=True)


def _exchange(conversation: Conversation, alice: User, turns: int, *, pad: int = 0) -> None:
    """``turns`` of: alice asks, the agent calls a tool, its result, the agent answers."""
    rows, position = [], 0
    for turn in range(turns):
        call = f"call_{turn}"
        for role, content in (
                ("user", [{"type": "text", "text": f"question {turn} " + "x" * pad}]),
                ("assistant", [{"type": "tool_use", "id": call, "name": "Read",
                                "input": {"file_path": f"f{turn}.txt"}}]),
                ("user", [{"type": "tool_result", "tool_use_id": call,
                           "content": f"contents {turn}", "is_error": False}]),
                ("assistant", [{"type": "text", "text": f"answer {turn}"}])):
            position += 1
            rows.append(Message(conversation=conversation, role=role, position=position,
                                content=content, author=alice if role == "user" else None,
                                author_name="Alice" if role == "user" else ""))
    Message.objects.bulk_create(rows)


async def _pages(client: Client, state: dict) -> list[list[dict]]:
    pages, before = [state["messages"]], state["before"]
    while before is not None:
        await client.send({"type": "history", "before": before})
        page = await client.until(lambda f: f["type"] == "history")
        pages.append(page["messages"])
        before = page["before"]
    return pages


async def test_the_state_carries_the_newest_page_and_history_pages_back_through_the_rest(
        alice: User, bob: User, conversation, settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "HISTORY_PAGE_MESSAGES": 10}
    await sync_to_async(_exchange)(conversation, alice, 30)
    b, state = await connect(bob, conversation.pk)
    assert len(state["messages"]) <= 10 and state["before"] is not None
    assert state["messages"][-1]["content"][0]["text"] == "answer 29"
    pages = await _pages(b, state)
    for page in pages:
        first = page[0]["content"][0]
        assert first["type"] != "tool_result"  # results travel with their calls
    shown = [m["id"] for page in reversed(pages) for m in page]
    stored = [pk async for pk in Message.objects.filter(conversation=conversation)
              .order_by("position", "id").values_list("pk", flat=True)]
    assert shown == stored  # every message once, in order
    await b.close()


async def test_a_page_keeps_to_its_byte_budget(alice: User, conversation, settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "HISTORY_PAGE_BYTES": 20_000}
    await sync_to_async(_exchange)(conversation, alice, 20, pad=4_000)
    a, state = await connect(alice, conversation.pk)
    size = len(json.dumps(state["messages"]))
    assert 10_000 < size < 20_000 + 5_000 and state["before"] is not None
    await a.close()


async def test_a_bad_cursor_is_refused_and_the_socket_stays(alice: User, conversation) -> None:
    a, _ = await connect(alice, conversation.pk)
    for before in ("nonsense", "p1", "u-3"):
        await a.send({"type": "history", "before": before})
        refused = await a.until(lambda f: f["type"] == "error")
        assert refused["code"] == "invalid"
    await a.send({"type": "history", "before": "p1.1"})
    empty = await a.until(lambda f: f["type"] == "history")
    assert empty == {"type": "history", "messages": [], "before": None, "wiki_changes": []}
    await a.close()


async def test_the_rest_api_pages_like_the_socket(alice: User, conversation, settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "HISTORY_PAGE_MESSAGES": 7}
    await sync_to_async(_exchange)(conversation, alice, 5)
    a, state = await connect(alice, conversation.pk)
    socket_pages = await _pages(a, state)
    http = HttpClient()
    await sync_to_async(http.force_login)(alice)
    url, before, rest_pages = f"/api/conversations/{conversation.pk}/messages", None, []
    while True:
        response = await sync_to_async(http.get)(url, {"before": before} if before else {})
        assert response.status_code == 200
        rest_pages.append(response.json()["messages"])
        before = response.json()["before"]
        if before is None:
            break
    assert rest_pages == socket_pages
    bad = await sync_to_async(http.get)(url, {"before": "x"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid"
    await a.close()


async def test_a_reconnect_that_missed_too_much_gets_a_fresh_state(
        alice: User, conversation, settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "REPLAY_MAX_EVENTS": 5}
    await sync_to_async(_exchange)(conversation, alice, 1)
    _, state = await connect(alice, conversation.pk)
    notes = [("warning", {"kind": "warning", "message": f"note {n}"}) for n in range(5)]
    await sync_to_async(events_append)(conversation.pk, notes)
    near, first = await connect(alice, conversation.pk, after_seq=state["seq"])
    assert first["type"] == "event" and first["seq"] == state["seq"] + 1  # 5 missed: replay
    await sync_to_async(events_append)(conversation.pk, notes[:1])
    far, fresh = await connect(alice, conversation.pk, after_seq=state["seq"])
    assert fresh["type"] == "state" and fresh["seq"] == state["seq"] + 6
    assert [m["id"] for m in fresh["messages"]] == [m["id"] for m in state["messages"]]
    for client in (near, far):
        await client.close()
