"""Every refusal of a ``send`` names its ``client_id`` and says why in plain words (issue 16):
the client marks that message "not sent" and gives its text back. Nothing is stored."""

from __future__ import annotations

import pytest

from apps.accounts.models import User
from apps.rooms.models import Message
from tests.consumers.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def short_limit(settings) -> int:
    settings.CONFAB = {**settings.CONFAB, "MESSAGE_MAX_CHARS": 20}
    return 20


async def _refusal(client, frame: dict) -> dict:
    await client.send(frame)
    return await client.until(lambda f: f["type"] == "error")


async def test_a_message_over_the_setting_is_refused_in_plain_words(
        alice: User, conversation, short_limit: int) -> None:
    a, _ = await connect(alice, conversation.pk)
    refused = await _refusal(a, {"type": "send", "client_id": "long1", "text": "y" * 21})
    assert refused == {"type": "error", "code": "too_large", "refused": "send",
                       "client_id": "long1",
                       "message": "The message is 21 characters long; at most 20 fit in one "
                                  "message. Shorten it or split it."}
    await a.send({"type": "send", "client_id": "ok1", "text": "y" * 20})
    assert (await a.until(lambda f: f["type"] == "ack"))["client_id"] == "ok1"
    assert [m.client_id async for m in Message.objects.filter(conversation=conversation)] == \
        ["ok1"]
    await a.close()


@pytest.mark.parametrize(("who", "frame", "code"), [
    ("alice", {"type": "send", "client_id": "b1", "text": "   "}, "bad_frame"),
    ("alice", {"type": "send", "client_id": "b2", "text": "hi", "extra": 1}, "bad_frame"),
    ("carol", {"type": "send", "client_id": "v1", "text": "hi"}, "forbidden"),
])
async def test_every_refused_send_names_its_client_id(who: str, frame: dict, code: str,
                                                      alice: User, carol: User,
                                                      conversation) -> None:
    client, _ = await connect(alice if who == "alice" else carol, conversation.pk)
    refused = await _refusal(client, frame)
    assert refused["code"] == code and refused["client_id"] == frame["client_id"]
    assert not await Message.objects.filter(conversation=conversation).aexists()
    await client.close()


async def test_an_answer_over_the_setting_is_refused_too(alice: User, conversation,
                                                        short_limit: int) -> None:
    a, _ = await connect(alice, conversation.pk)
    refused = await _refusal(a, {"type": "answer", "question_id": "q", "text": "z" * 21})
    assert refused["code"] == "too_large" and "client_id" not in refused
    await a.close()


@pytest.mark.parametrize("frame", [
    {"type": "send", "client_id": "n1", "text": "a\x00b"},
    {"type": "answer", "question_id": "q\x00", "text": "yes"},
    {"type": "decide", "tool_call_id": "\x00", "decision": "deny"},
    {"type": "decide", "tool_call_id": "c1", "decision": "approve",
     "arguments": {"command": ["ls", "a\x00b"]}},  # nested: stored as the call's arguments
    {"type": "send", "client_id": "n2", "text": "/s:p",
     "prompt": {"server": "s", "name": "p", "arguments": {"\x00": "x"}}},  # a key
], ids=["send-text", "answer-question-id", "decide-tool-call-id", "decide-arguments",
        "prompt-argument-name"])
async def test_a_nul_character_is_refused_as_a_bad_frame(alice: User, conversation,
                                                         frame: dict) -> None:
    """PostgreSQL cannot store U+0000: such a frame used to fail in the database and close the
    socket with 1011 (the chaos suite's frame fuzz); it is refused, and the socket stays."""
    a, _ = await connect(alice, conversation.pk)
    refused = await _refusal(a, frame)
    assert refused["code"] == "bad_frame" and "NUL" in refused["message"]
    assert not await Message.objects.filter(conversation=conversation).aexists()
    await a.send({"type": "send", "client_id": "ok2", "text": "still here"})
    assert (await a.until(lambda f: f["type"] == "ack"))["client_id"] == "ok2"
    await a.close()


async def test_a_send_to_a_conversation_deleted_since_connecting_is_not_found(
        alice: User, conversation) -> None:
    """The frame's membership and conversation come from one lookup (issue 22): a member
    whose conversation is gone is told so (not closed as a removed member)."""
    client, _ = await connect(alice, conversation.pk)
    await conversation.adelete()
    refused = await _refusal(client, {"type": "send", "client_id": "gone1", "text": "hi"})
    assert refused["code"] == "not_found" and refused["client_id"] == "gone1"
    await client.close()
