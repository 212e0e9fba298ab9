"""Titles (issue 19): the model titles a conversation after its first exchange, once the run
has ended (the offline model with the first words of the first message), and a member renames
it with a ``rename`` frame; every watcher sees ``title_changed`` live."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import User
from apps.engine.titles import TITLE_INSTRUCTION
from apps.rooms.models import Conversation
from apps.rooms.titles import DEFAULT_TITLE, title_auto_save
from tests.consumers.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def untitled(conversation: Conversation) -> Conversation:
    await Conversation.objects.filter(pk=conversation.pk).aupdate(title=DEFAULT_TITLE)
    return conversation


def _last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


async def test_the_first_exchange_is_titled_after_the_run_ends(
        alice: User, bob: User, untitled: Conversation, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    a, _ = await connect(alice, untitled.pk)
    b, _ = await connect(bob, untitled.pk)
    await a.send({"type": "send", "client_id": "a1",
                  "text": "Plan the office move to Berlin next spring, please"})
    ended = await b.until(lambda f: f["type"] == "event" and f["event"]["kind"] == "run_ended")
    titled = await b.until(lambda f: f["type"] == "event"
                           and f["event"]["kind"] == "title_changed")

    assert titled["seq"] > ended["seq"]  # after the run's end, not on its way
    assert titled["event"] == {"kind": "title_changed", "by": None,
                               "title": "Plan the office move to Berlin"}
    assert (await a.until_event("title_changed"))["title"] == "Plan the office move to Berlin"
    assert len(model_requests) == 2
    assert _last_user_text(model_requests[1]).startswith(TITLE_INSTRUCTION)
    assert "tools" not in model_requests[1] or not model_requests[1]["tools"]
    await untitled.arefresh_from_db()
    assert untitled.title == "Plan the office move to Berlin"

    await a.send({"type": "send", "client_id": "a2", "text": "and the budget?"})
    await a.until_event("run_ended")
    assert len(model_requests) == 3  # titled once: the second exchange asks for no title
    await a.close()
    await b.close()


async def test_a_rename_beats_the_automatic_title(alice: User, untitled: Conversation) -> None:
    a, _ = await connect(alice, untitled.pk)
    await a.send({"type": "rename", "title": "Berlin move"})
    await a.until_event("title_changed")
    assert not await sync_to_async(title_auto_save)(untitled.pk, "Plan the office move")
    await untitled.arefresh_from_db()
    assert untitled.title == "Berlin move"
    await a.close()


async def test_a_member_renames_and_every_watcher_sees_it(
        alice: User, bob: User, carol: User, conversation: Conversation) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    c, _ = await connect(carol, conversation.pk)
    await b.send({"type": "rename", "title": "  Q3 plans 第三季度  "})
    for client in (a, b, c):
        changed = await client.until_event("title_changed")
        assert changed == {"kind": "title_changed", "title": "Q3 plans 第三季度",
                           "by": {"id": bob.pk, "name": "Bob"}}

    await c.send({"type": "rename", "title": "Mine now"})
    assert (await c.until(lambda f: f["type"] == "error"))["code"] == "forbidden"
    await a.send({"type": "rename", "title": "x" * 201})
    too_long = await a.until(lambda f: f["type"] == "error")
    assert too_long["code"] == "invalid" and "200" in too_long["message"]
    await a.send({"type": "rename", "title": ""})
    assert (await a.until(lambda f: f["type"] == "error"))["code"] == "bad_frame"
    await conversation.arefresh_from_db()
    assert conversation.title == "Q3 plans 第三季度"
    for client in (a, b, c):
        await client.close()


async def test_a_rename_and_the_automatic_title_follow_the_title_rules(
        alice: User, untitled: Conversation) -> None:
    """One set of rules for every title (apps/rooms/names.py): nothing visible is refused,
    the length counts once trimmed, and a title is one line."""
    assert not await sync_to_async(title_auto_save)(untitled.pk, "\u200b\u200b")  # blank
    await untitled.arefresh_from_db()
    assert untitled.title == DEFAULT_TITLE
    assert await sync_to_async(title_auto_save)(untitled.pk, "Berlin\nmove ")
    await untitled.arefresh_from_db()
    assert untitled.title == "Berlin move"

    a, _ = await connect(alice, untitled.pk)
    await a.send({"type": "rename", "title": "\u200b"})
    refused = await a.until(lambda f: f["type"] == "error")
    assert (refused["code"], refused["message"]) == ("invalid", "The title cannot be empty.")
    await a.send({"type": "rename", "title": " " + "W" * 200 + " "})
    assert (await a.until_event("title_changed"))["title"] == "W" * 200
    await a.send({"type": "rename", "title": "two\nlines"})
    assert (await a.until_event("title_changed"))["title"] == "two lines"
    await a.close()
