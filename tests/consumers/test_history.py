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
    assert len(state["messages"]) <= 11 and state["before"] is not None  # 10, or 11 to reach
    # back from a results message to its calls
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
    assert empty == {"type": "history", "messages": [], "before": None, "wiki_changes": [],
                     "forks": []}
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


def _big_results(conversation: Conversation, alice: User) -> None:
    """Alice asks; the agent calls two tools whose results are ~29,000 characters each; then
    three short turns."""
    rows = [("user", [{"type": "text", "text": "run both"}]),
            ("assistant", [{"type": "tool_use", "id": f"c{n}", "name": "Bash",
                            "input": {"command": f"seq {n}"}} for n in (1, 2)]),
            ("user", [{"type": "tool_result", "tool_use_id": f"c{n}", "content": "y" * 29_000,
                       "is_error": False} for n in (1, 2)])]
    rows += [("assistant", [{"type": "text", "text": f"tail {n}"}]) for n in range(3)]
    Message.objects.bulk_create([
        Message(conversation=conversation, role=role, position=i + 1, content=content,
                author=alice if role == "user" else None,
                author_name="Alice" if role == "user" else "")
        for i, (role, content) in enumerate(rows)])


async def test_a_huge_results_message_comes_in_the_page_of_its_calls(
        alice: User, conversation) -> None:
    await sync_to_async(_big_results)(conversation, alice)
    a, state = await connect(alice, conversation.pk)
    pages = await _pages(a, state)
    for page in pages:
        assert page[0]["content"][0]["type"] != "tool_result"
    holding = [page for page in pages if any(b["type"] == "tool_result"
                                             for m in page for b in m["content"])]
    [page] = holding
    assert any(b["type"] == "tool_use" for m in page for b in m["content"])
    await a.close()


async def test_the_budget_counts_what_the_socket_sends(alice: User, conversation,
                                                       settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "HISTORY_PAGE_BYTES": 20_000}
    await sync_to_async(_exchange)(conversation, alice, 20, pad=0)
    await Message.objects.filter(conversation=conversation, role="user").aupdate(
        content=[{"type": "text", "text": "🎉" * 1_000}])  # 12 bytes each on the wire
    a, state = await connect(alice, conversation.pk)
    assert len(json.dumps(state["messages"])) < 20_000 + 13_000
    await a.close()


async def test_a_cursor_of_a_pending_message_that_joined_the_history_goes_on_from_there(
        alice: User, conversation, settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "HISTORY_PAGE_MESSAGES": 3}
    await sync_to_async(_exchange)(conversation, alice, 2)
    pending = [await Message.objects.acreate(
        conversation=conversation, role="user", status="pending", author=alice,
        author_name="Alice", content=[{"type": "text", "text": f"later {n}"}])
        for n in range(4)]
    a, state = await connect(alice, conversation.pk)
    assert state["before"] == f"u{pending[1].pk}"
    for offset, row in enumerate(pending):  # they join the history at the next step
        await Message.objects.filter(pk=row.pk).aupdate(position=9 + offset, status="complete")
    await a.send({"type": "history", "before": state["before"]})
    page = await a.until(lambda f: f["type"] == "history")
    seen = {m["id"] for m in state["messages"]}
    assert not seen & {m["id"] for m in page["messages"]}  # nothing twice
    assert [m["id"] for m in page["messages"]][-1] < pending[1].pk  # older, not newer
    await a.close()


async def test_a_cursor_with_a_trailing_newline_is_refused(alice: User, conversation) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "history", "before": "p1.1\n"})
    assert (await a.until(lambda f: f["type"] == "error"))["code"] == "invalid"
    await a.close()
