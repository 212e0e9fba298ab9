"""A person's open sockets end with their credentials (issue 14): a password change, signing out
(that session only), signing out everywhere, a deactivation, a revoked token. The room socket
and the wiki socket close with 4401 at once, and a frame (or a wiki event) that races the close
is refused — the removal-from-a-team rule (4404), for credentials."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.test import Client
from django.urls import reverse

from apps.accounts.models import ApiToken, User
from apps.accounts.services import api_token_create
from apps.rooms import consumers as room_consumers
from apps.rooms.models import Message
from apps.wiki import consumers as wiki_consumers
from apps.wiki.services import page_save
from config.asgi import application
from tests.consumers.conftest import TIMEOUT
from tests.integration.personas import make_user

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://localhost:8000")


@sync_to_async
def signed_in(user: User) -> Client:
    """A browser signed in as ``user`` (a session of its own)."""
    client = Client()
    client.force_login(user)
    return client


def with_session(client: Client) -> list[tuple[bytes, bytes]]:
    name = settings.SESSION_COOKIE_NAME
    return [(b"cookie", f"{name}={client.cookies[name].value}".encode()), ORIGIN]


def with_token(raw: str) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {raw}".encode())]


async def room_socket(conversation_id: int, headers: list[tuple[bytes, bytes]]
                      ) -> WebsocketCommunicator:
    """An open conversation socket, past its state frame."""
    socket = WebsocketCommunicator(application, f"/ws/conversations/{conversation_id}/",
                                   headers=headers)
    assert (await socket.connect(timeout=TIMEOUT))[0]
    assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "state"
    return socket


async def wiki_socket(team_id: int, headers: list[tuple[bytes, bytes]]) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(application, f"/ws/teams/{team_id}/wiki/", headers=headers)
    assert (await socket.connect(timeout=TIMEOUT))[0]
    return socket


async def closed_with(socket: WebsocketCommunicator) -> int:
    """The close code, skipping the frames before it (presence...)."""
    while True:
        output = await socket.receive_output(timeout=TIMEOUT)
        if output["type"] == "websocket.close":
            return output["code"]


async def answers(socket: WebsocketCommunicator) -> bool:
    """Whether the socket is still open and reading: a frame gets its answer (the room relays
    typing; the wiki socket says it reads none)."""
    await socket.send_json_to({"type": "typing"})
    while True:
        output = await socket.receive_output(timeout=TIMEOUT)
        if output["type"] == "websocket.close":
            return False
        frame = json.loads(output["text"])
        if frame.get("typing") or frame["type"] == "error":
            return True


async def test_a_password_change_closes_every_session_socket_of_the_person_at_once(
        acme, alice: User, bob: User, conversation) -> None:
    browser = await signed_in(bob)
    room = await room_socket(conversation.pk, with_session(browser))
    wiki = await wiki_socket(acme.pk, with_session(browser))
    other = await room_socket(conversation.pk, with_session(await signed_in(alice)))

    @sync_to_async
    def change_password() -> None:
        bob.set_password("a-new-passphrase-42")
        bob.save()

    await change_password()
    assert await closed_with(room) == 4401
    assert await closed_with(wiki) == 4401
    assert await answers(other)  # alice's socket is not bob's
    await other.disconnect()


async def test_signing_out_closes_that_sessions_sockets_and_no_other(
        acme, bob: User, conversation) -> None:
    leaving, staying = await signed_in(bob), await signed_in(bob)
    room = await room_socket(conversation.pk, with_session(leaving))
    wiki = await wiki_socket(acme.pk, with_session(leaving))
    kept = await room_socket(conversation.pk, with_session(staying))
    await sync_to_async(leaving.post)(reverse("accounts:logout"))
    assert await closed_with(room) == 4401
    assert await closed_with(wiki) == 4401
    assert await answers(kept)
    await kept.disconnect()


async def test_signing_out_everywhere_closes_every_session_socket_but_not_token_ones(
        acme, bob: User, conversation) -> None:
    here, elsewhere = await signed_in(bob), await signed_in(bob)
    sockets = [await room_socket(conversation.pk, with_session(here)),
               await room_socket(conversation.pk, with_session(elsewhere)),
               await wiki_socket(acme.pk, with_session(elsewhere))]
    _, raw = await sync_to_async(api_token_create)(user=bob, name="script")
    script = await room_socket(conversation.pk, with_token(raw))
    response = await sync_to_async(here.post)(reverse("accounts:sign_out_everywhere"))
    assert response.status_code == 302
    assert [await closed_with(socket) for socket in sockets] == [4401, 4401, 4401]
    assert await answers(script)  # tokens are revoked on their own page
    await script.disconnect()


async def test_a_deactivated_person_loses_session_and_token_sockets(
        acme, bob: User, conversation) -> None:
    _, raw = await sync_to_async(api_token_create)(user=bob, name="script")
    sockets = [await room_socket(conversation.pk, with_session(await signed_in(bob))),
               await room_socket(conversation.pk, with_token(raw)),
               await wiki_socket(acme.pk, with_token(raw))]

    @sync_to_async
    def deactivate() -> None:  # as the admin's user form does
        bob.is_active = False
        bob.save()

    await deactivate()
    assert [await closed_with(socket) for socket in sockets] == [4401, 4401, 4401]


@pytest.mark.parametrize("how", ["the tokens page", "the admin"])
async def test_a_revoked_token_closes_its_sockets(how: str, acme, bob: User,
                                                  conversation) -> None:
    token, raw = await sync_to_async(api_token_create)(user=bob, name="script")
    room = await room_socket(conversation.pk, with_token(raw))
    wiki = await wiki_socket(acme.pk, with_token(raw))
    browser = await room_socket(conversation.pk, with_session(await signed_in(bob)))

    @sync_to_async
    def revoke() -> None:
        page = Client()
        if how == "the tokens page":
            page.force_login(bob)
            page.post(reverse("accounts:token_revoke", args=[token.pk]))
        else:
            staff = make_user("root")
            User.objects.filter(pk=staff.pk).update(is_staff=True, is_superuser=True)
            page.force_login(staff)
            page.post(reverse("admin:accounts_apitoken_changelist"),
                      {"action": "revoke", "_selected_action": [token.pk]})
        assert ApiToken.objects.get(pk=token.pk).revoked

    await revoke()
    assert await closed_with(room) == 4401
    assert await closed_with(wiki) == 4401
    assert await answers(browser)
    await browser.disconnect()


@pytest.mark.parametrize("auth", ["session", "token"])
async def test_a_frame_that_races_the_close_is_refused(auth: str, bob: User,
                                                       conversation) -> None:
    """The change is made without any signal (an UPDATE), as if its broadcast were still on
    the way: the socket's next frame finds the credentials gone."""
    token, raw = await sync_to_async(api_token_create)(user=bob, name="script")
    headers = with_session(await signed_in(bob)) if auth == "session" else with_token(raw)
    room = await room_socket(conversation.pk, headers)
    if auth == "session":
        await User.objects.filter(pk=bob.pk).aupdate(password=make_password("elsewhere-9"))
    else:
        await ApiToken.objects.filter(pk=token.pk).aupdate(revoked=True)
    await room.send_json_to({"type": "send", "client_id": "late-1", "text": "still here?"})
    assert await closed_with(room) == 4401
    assert not await Message.objects.filter(client_id="late-1").aexists()


async def test_a_wiki_change_that_races_the_close_is_not_forwarded(acme, alice: User,
                                                                   bob: User) -> None:
    wiki = await wiki_socket(acme.pk, with_session(await signed_in(bob)))
    await User.objects.filter(pk=bob.pk).aupdate(password=make_password("elsewhere-9"))
    await sync_to_async(page_save)(team=acme, by=alice, path="Secret.md", content="# Plans\n",
                                   expected_blob=None, message="Plans")
    output = await wiki.receive_output(timeout=TIMEOUT)
    assert output == {"type": "websocket.close", "code": 4401}


def _deactivate(user_id: int) -> None:
    user = User.objects.get(pk=user_id)
    user.is_active = False
    user.save()  # as the admin's user form does: the signal tells the person's group


async def _closed_or_open(socket: WebsocketCommunicator) -> int | str:
    try:
        return await closed_with(socket)
    except TimeoutError:
        return "open"


async def test_a_deactivation_between_sign_in_and_join_closes_the_wiki_socket(
        monkeypatch: pytest.MonkeyPatch, acme, bob: User) -> None:
    # Announced before the socket joined the person's group, it could not hear it: the
    # socket looks once more after joining (found by review).
    real = wiki_consumers.amembership_of

    async def racing(user: User, team_id: int) -> object:
        found = await real(user, team_id)
        await sync_to_async(_deactivate)(user.pk)  # commits before the join
        return found

    monkeypatch.setattr(wiki_consumers, "amembership_of", racing)
    socket = WebsocketCommunicator(application, f"/ws/teams/{acme.pk}/wiki/",
                                   headers=with_session(await signed_in(bob)))
    assert (await socket.connect(timeout=TIMEOUT))[0]
    assert await _closed_or_open(socket) == 4401


async def test_a_deactivation_between_sign_in_and_join_closes_the_room_socket(
        monkeypatch: pytest.MonkeyPatch, bob: User, conversation) -> None:
    real = room_consumers.conversation_for

    def racing(user: User, conversation_id: int) -> object:
        found = real(user, conversation_id)
        _deactivate(user.pk)  # commits before the socket joins the person's group
        return found

    monkeypatch.setattr(room_consumers, "conversation_for", racing)
    socket = WebsocketCommunicator(application, f"/ws/conversations/{conversation.pk}/",
                                   headers=with_session(await signed_in(bob)))
    assert (await socket.connect(timeout=TIMEOUT))[0]
    assert await _closed_or_open(socket) == 4401
