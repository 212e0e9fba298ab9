"""TokenAuthMiddleware: a bearer token or else the session cookie, and which one it was."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from apps.accounts.auth import TokenAuthMiddleware
from apps.accounts.models import User
from tests.integration.personas import mint_token

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("close_db_threads")]


async def who(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A socket that says who the middleware decided it is, then closes."""
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    user = scope["user"]
    await send({"type": "websocket.send", "text": json.dumps({
        "user": user.username if user.is_authenticated else None,
        "auth_method": scope["auth_method"],
    })})
    await send({"type": "websocket.close", "code": 1000})


async def connect(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    communicator = WebsocketCommunicator(TokenAuthMiddleware(who), "/ws/test/", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    answer = await communicator.receive_json_from()
    await communicator.disconnect()
    return answer


@sync_to_async
def session_cookie(user: User) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return b"cookie", f"{name}={client.cookies[name].value}".encode()


async def test_a_bearer_token_authenticates_the_socket(alice: User) -> None:
    raw = await sync_to_async(mint_token)(alice)
    answer = await connect([(b"authorization", f"Bearer {raw}".encode())])
    assert answer == {"user": "alice", "auth_method": "token"}


async def test_the_session_cookie_authenticates_without_a_header(alice: User) -> None:
    answer = await connect([await session_cookie(alice)])
    assert answer == {"user": "alice", "auth_method": "session"}


async def test_a_bad_token_never_falls_back_to_the_cookie(alice: User) -> None:
    cookie = await session_cookie(alice)
    answer = await connect([cookie, (b"authorization", b"Bearer cf_forged")])
    assert answer == {"user": None, "auth_method": "token"}


async def test_no_credentials_means_an_anonymous_session_socket(db: None) -> None:
    assert await connect([]) == {"user": None, "auth_method": "session"}
