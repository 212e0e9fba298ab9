"""Service refusals speak the person's language (issue 25): the ``message`` of a REST error, of
a socket's ``error`` frame and of a refused page is in the request's (or the socket's, chosen
at connect) language; the ``code`` is protocol and stays English. Another team's object is
refused exactly like a missing one, in both languages."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Team, User
from apps.rooms.models import Conversation, Message, Room
from tests.consumers.conftest import connect, fresh_channel_layer  # noqa: F401 (a fixture)
from tests.integration.i18n.test_language import CHINESE, ENGLISH, signed_in
from tests.integration.personas import mint_token

NO_SUCH_CONVERSATION = {"code": "not_found", "message": "没有这个对话。"}
VIEWERS_WATCH = "观察者只能观看，不能参与。"


@pytest.fixture
def conversation(acme: Team, alice: User) -> Conversation:
    room = Room.objects.create(team=acme, name="General", created_by=alice)
    return Conversation.objects.create(room=room, title="Plans", created_by=alice)


def _export(client: Client, conversation_id: int, **headers: str):
    return client.get(f"/api/conversations/{conversation_id}/export.json", **headers)


@pytest.mark.django_db
def test_a_rest_refusal_speaks_the_requests_language(alice: User, charlie: User,
                                                     conversation: Conversation) -> None:
    missing = _export(signed_in(alice), conversation.pk + 1000, **CHINESE)
    assert missing.status_code == 404 and missing.json() == NO_SUCH_CONVERSATION
    not_yours = _export(signed_in(charlie), conversation.pk, **CHINESE)  # Globex's charlie
    assert not_yours.status_code == 404 and not_yours.json() == NO_SUCH_CONVERSATION
    english = _export(signed_in(alice), conversation.pk + 1000, **ENGLISH)
    assert english.json() == {"code": "not_found", "message": "No such conversation."}
    anonymous = _export(Client(), conversation.pk, **CHINESE)
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "not_authenticated"
    assert anonymous.json()["message"].startswith("请登录，或以")


@pytest.mark.django_db
def test_a_rest_refusal_follows_the_persons_own_choice(alice: User) -> None:
    alice.language = "zh-hans"
    alice.save()
    assert _export(signed_in(alice), 4242, **ENGLISH).json() == NO_SUCH_CONVERSATION


@pytest.mark.django_db
def test_a_refused_page_says_why_in_the_persons_language(carol: User, acme: Team) -> None:
    refused = signed_in(carol).post(reverse("rooms:room_new"),
                                    {"team_id": acme.pk, "name": "Ops"}, **CHINESE)
    assert refused.status_code == 403
    page = refused.content.decode()
    assert VIEWERS_WATCH in page and "<h1>无权访问</h1>" in page
    assert not Room.objects.filter(name="Ops").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("language", "headers", "said"), [
    ("", [(b"accept-language", b"zh-CN,zh;q=0.9")], VIEWERS_WATCH),
    ("zh-hans", [(b"accept-language", b"en-US,en;q=0.9")], VIEWERS_WATCH),  # the profile wins
    ("", [(b"cookie", b"django_language=zh-hans"), (b"accept-language", b"en")],
     VIEWERS_WATCH),
    ("", [(b"accept-language", b"en-US,en;q=0.9")], "Viewers can watch but not take part."),
    ("", [], "Viewers can watch but not take part."),
], ids=["browser", "profile", "cookie", "english", "no-header"])
async def test_a_socket_refusal_speaks_the_language_chosen_at_connect(
        language: str, headers: list[tuple[bytes, bytes]], said: str, carol: User,
        conversation: Conversation) -> None:
    carol.language = language
    await carol.asave(update_fields=["language"])
    client, _ = await connect(carol, conversation.pk, headers=headers)
    await client.send({"type": "send", "client_id": "v1", "text": "你好"})
    refused = await client.until(lambda f: f["type"] == "error")
    assert refused == {"type": "error", "code": "forbidden", "refused": "send", "client_id": "v1",
                       "message": said}
    await client.send({"type": "send", "client_id": "v2"})  # a bad frame: later, same language
    assert (await client.until(lambda f: f["type"] == "error"))["code"] == "bad_frame"
    assert not await Message.objects.filter(conversation_id=conversation.pk).aexists()
    await client.close()


@pytest.mark.django_db
def test_a_bad_agent_handle_is_refused_in_the_persons_language(alice: User, acme: Team) -> None:
    """The model field's validator speaks through the service's ``invalid`` refusal."""
    refused = signed_in(alice).post(reverse("integrations:team_agent_handle", args=[acme.pk]),
                                    {"handle": "-dash"}, **CHINESE)
    assert refused.status_code == 200
    assert "只能包含文字（任何语言的字母或汉字）、数字、_ 和 -，且不能以 - 开头。" in (
        refused.content.decode())
    acme.refresh_from_db()
    assert acme.agent_handle == "agent"


@pytest.mark.django_db
def test_a_token_request_follows_the_token_owners_own_choice(alice: User) -> None:
    alice.language = "zh-hans"
    alice.save()
    client = Client(headers={"Authorization": f"Bearer {mint_token(alice)}"})
    refused = _export(client, 4242, **ENGLISH)  # the token's owner chose Chinese
    assert refused.status_code == 404 and refused.json() == NO_SUCH_CONVERSATION
