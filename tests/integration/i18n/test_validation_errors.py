"""Validation refusals speak the person's language (issue 25): pydantic's English messages of a
REST 400 and of a socket's ``bad_frame`` are rendered by error ``type`` into a translated
sentence, our own validators' texts are translated, the field's location and the ``code`` stay
as the protocol spells them, and English is what it was."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import translation

from apps.accounts.models import Team, User
from apps.common.validation_errors import error_sentence
from apps.rooms.models import Conversation, Message, Room
from tests.consumers.conftest import connect, fresh_channel_layer  # noqa: F401 (a fixture)
from tests.integration.i18n.test_language import CHINESE, ENGLISH, signed_in

ZH_SOCKET = [(b"accept-language", b"zh-CN,zh;q=0.9")]


@pytest.fixture
def conversation(acme: Team, alice: User) -> Conversation:
    room = Room.objects.create(team=acme, name="General", created_by=alice)
    return Conversation.objects.create(room=room, title="Plans", created_by=alice)


def _refusal(client: Client, method: str, path: str, body: str | None = None, **headers: str
             ) -> dict:
    call = getattr(client, method)
    response = (call(path, body, content_type="application/json", **headers)
                if body is not None else call(path, **headers))
    assert response.status_code == 400
    return response.json()


@pytest.mark.django_db
def test_a_rest_validation_refusal_is_translated(alice: User, conversation: Conversation) -> None:
    client = signed_in(alice)
    post = f"/api/rooms/{conversation.room_id}/conversations"
    assert _refusal(client, "get", "/api/search?q=", **CHINESE) == {
        "code": "invalid", "message": "query.q: 至少需要 1 个字符。"}
    assert _refusal(client, "get", "/api/search?q=x&limit=500", **CHINESE)["message"] == (
        "query.limit: 应小于或等于 200。")
    assert _refusal(client, "post", post, '{"title": ""}', **CHINESE)["message"] == (
        "body.payload.title: 至少需要 1 个字符。")
    assert _refusal(client, "post", post, "{bad json", **CHINESE) == {
        "code": "invalid", "message": "无法解析请求正文（应为 JSON）。"}
    assert Conversation.objects.count() == 1  # nothing made, nothing lost


@pytest.mark.django_db
def test_english_validation_refusals_read_as_before(alice: User,
                                                    conversation: Conversation) -> None:
    client = signed_in(alice)
    assert _refusal(client, "get", "/api/search?q=", **ENGLISH)["message"] == (
        "query.q: String should have at least 1 character")
    wiki_search = f"/api/teams/{conversation.room.team_id}/wiki/search?q="
    assert _refusal(client, "get", wiki_search + "x" * 201, **ENGLISH)["message"] == (
        "query.q: String should have at most 200 characters")
    post = f"/api/rooms/{conversation.room_id}/conversations"
    assert _refusal(client, "post", post, "{bad json", **ENGLISH)["message"] == (
        "Cannot parse request body")


def test_an_unlisted_error_type_falls_back_to_a_generic_sentence() -> None:
    odd = {"type": "uuid_parsing", "msg": "Input should be a valid UUID", "loc": ("id",)}
    with translation.override("zh-hans"):
        assert error_sentence(odd) == "此值无效。"
        assert error_sentence({"type": "string_too_short", "ctx": {}}) == "此值无效。"
    with translation.override("en"):
        assert error_sentence(odd) == "Input should be a valid UUID"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("frame", "said"), [
    ({"type": "send", "client_id": "z1", "text": "   "}, "send: 值无效：文本为空。"),
    ({"type": "bogus"}, "frame: 'type' 的值“bogus”不是预期的值之一："),
    ({"type": "rename", "title": ""}, "rename.title: 至少需要 1 个字符。"),
    ({"type": "send", "client_id": "z2", "text": "a\x00b"}, "send.text: 值无效：包含无法存储的"),
], ids=["blank", "unknown-type", "empty-title", "nul"])
async def test_a_bad_frame_is_refused_in_the_sockets_language(
        frame: dict, said: str, alice: User, conversation: Conversation) -> None:
    client, _ = await connect(alice, conversation.pk, headers=ZH_SOCKET)
    await client.send(frame)
    refused = await client.until(lambda f: f["type"] == "error")
    assert refused["code"] == "bad_frame" and refused["message"].startswith(said), refused
    assert not await Message.objects.filter(conversation_id=conversation.pk).aexists()
    await client.close()
