"""Edit and regenerate through the run worker and fakellm (issue 19): the new run's request
to the model holds the current version only, and every watcher learns which messages became
the earlier version."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Membership, User
from apps.rooms.models import Conversation, Message, Run
from apps.rooms.services.versions import answer_regenerate, message_edit
from tests.consumers.conftest import Client, connect

pytestmark = pytest.mark.django_db(transaction=True)


def _turns(body: dict[str, Any]) -> list[tuple[str, str]]:
    """``(role, text)`` of each text block of an Anthropic request body's messages."""
    turns = []
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        turns += [(message["role"], b["text"]) for b in blocks if b.get("type") == "text"]
    return turns


async def _ask(client: Client, client_id: str, text: str) -> None:
    await client.send({"type": "send", "client_id": client_id, "text": text})
    await client.until_event("run_ended")


async def _membership(user: User, conversation: Conversation) -> Membership:
    return await Membership.objects.select_related("user").aget(
        user=user, team_id=conversation.room.team_id)


async def test_a_regenerated_answer_is_asked_for_without_the_old_one(
        alice: User, bob: User, conversation: Conversation, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await _ask(a, "a1", "name a colour")
    old = [m async for m in Message.objects.filter(conversation=conversation, role="assistant")]
    assert old and len(model_requests) == 1

    run = await sync_to_async(answer_regenerate)(
        conversation=conversation, membership=await _membership(bob, conversation))
    superseded = await b.until_event("messages_superseded")
    assert superseded["message_ids"] == [m.pk for m in old]
    assert superseded["engine_ids"] == [m.engine_id for m in old]  # as live streaming named them
    assert superseded["by"] == {"id": bob.pk, "name": "Bob"}
    assert (await a.until_event("run_ended"))["status"] == "completed"

    assert len(model_requests) == 2
    assert [role for role, _ in _turns(model_requests[1])] == ["user", "user"]  # [Alice], text
    assert _turns(model_requests[1])[-1] == ("user", "name a colour")
    answers = [m async for m in Message.objects.filter(conversation=conversation,
                                                        role="assistant").order_by("id")]
    assert [m.superseded_by_id for m in answers] == [run.pk] * len(old) + [None]
    assert answers[-1].run_id == run.pk
    await a.close()
    await b.close()


async def test_an_edited_message_is_answered_on_its_new_text_only(
        alice: User, conversation: Conversation, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    a, _ = await connect(alice, conversation.pk)
    await _ask(a, "a1", "what is 2+2, plaese")
    first = await Message.objects.aget(conversation=conversation, client_id="a1")

    new = await sync_to_async(message_edit)(
        conversation=conversation, membership=await _membership(alice, conversation),
        message_id=first.pk, text="what is 2+3, please")
    shown = await a.until_event("user_message")
    assert shown["message"]["id"] == new.pk and shown["message"]["run_id"] == new.run_id
    await a.until_event("run_ended")

    said = [text for _, text in _turns(model_requests[-1])]
    assert "what is 2+3, please" in said and "what is 2+2, plaese" not in said
    assert all(role == "user" for role, _ in _turns(model_requests[-1]))  # no old answer
    await first.arefresh_from_db()
    assert first.superseded_by_id == new.run_id
    await a.close()


async def test_a_chat_edit_in_a_mention_conversation_runs_nothing_and_a_mention_does(
        alice: User, bob: User, conversation: Conversation, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    """In a ``mention`` conversation an edit keeps the send's rules: a chat edit reaches every
    watcher as an earlier version replaced by the new message, no run; an edit that mentions
    the agent runs it on the new text only."""
    await Conversation.objects.filter(pk=conversation.pk).aupdate(agent_mode="mention")
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await b.send({"type": "send", "client_id": "b1", "text": "lunch at noon?"})
    ack = await b.until(lambda f: f["type"] == "ack")
    assert ack["run"] == "none"
    bobs = await _membership(bob, conversation)

    chat = await sync_to_async(message_edit)(conversation=conversation, membership=bobs,
                                             message_id=ack["message_id"], text="lunch at one?")
    superseded = await a.until_event("messages_superseded")
    assert (superseded["message_ids"], superseded["run_id"], superseded["message_id"]) == (
        [ack["message_id"]], None, chat.pk)
    shown = (await a.until_event("user_message"))["message"]
    assert (shown["id"], shown["run_id"], shown["wakes_agent"]) == (chat.pk, None, False)
    assert all(e["event"]["kind"] != "run_queued" for e in a.events)
    assert not await Run.objects.filter(conversation=conversation).aexists()

    asked = await sync_to_async(message_edit)(conversation=conversation, membership=bobs,
                                              message_id=chat.pk, text="@agent lunch at one?")
    assert asked.wakes_agent and asked.run_id is not None
    assert (await a.until_event("messages_superseded"))["run_id"] == asked.run_id
    assert (await a.until_event("run_ended"))["status"] == "completed"
    assert [text for _, text in _turns(model_requests[-1])] == ["[Bob]", "@agent lunch at one?"]
    await a.close()
    await b.close()
