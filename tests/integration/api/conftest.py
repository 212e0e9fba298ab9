"""REST API fixtures: a room and a conversation of Acme, and clients signed in as a persona
(the personas come from ``tests/integration/personas.py``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from apps.accounts.models import Team, User
from apps.rooms.models import Conversation, Room
from tests.integration.personas import mint_token


@pytest.fixture
def room(acme: Team, alice: User) -> Room:
    """Acme's room, made by alice."""
    return Room.objects.create(team=acme, name="General", created_by=alice)


@pytest.fixture
def conversation(room: Room, alice: User) -> Conversation:
    """A conversation in Acme's room, started by alice."""
    return Conversation.objects.create(room=room, title="Plans", created_by=alice)


@pytest.fixture
def token_client() -> Callable[[User], Client]:
    """A client that sends a fresh personal API token of ``user``, with CSRF checks enforced
    as for a browser (token requests must pass without a CSRF token)."""

    def make(user: User) -> Client:
        return Client(enforce_csrf_checks=True,
                      headers={"Authorization": f"Bearer {mint_token(user)}"})

    return make


@pytest.fixture
def session_client() -> Callable[[User], Client]:
    """A client signed in with a session cookie (CSRF not enforced: test_auth covers it)."""

    def make(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make
