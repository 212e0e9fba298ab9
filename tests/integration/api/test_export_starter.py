"""Who an export says started the conversation (issue 16): its creator, else the author of its
first message — never "someone" while a person is known. The demo's conversations are alice's."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from apps.accounts.models import User
from apps.engine.messages import Message as EngineMessage
from apps.rooms.models import Conversation, Message
from apps.rooms.transcript import message_fields
from tests.integration.api.streams import body

pytestmark = pytest.mark.django_db


def test_the_demos_first_conversation_is_alices_in_its_export(token_client) -> None:
    out = io.StringIO()
    call_command("demo", "--json", stdout=out)
    demo = json.loads(out.getvalue())
    alice = User.objects.get(pk=demo["users"]["alice"]["id"])
    path = f"/api/conversations/{demo['conversation']['id']}/export"
    markdown = body(token_client(alice).get(path + ".md"))
    assert "started by Alice on" in markdown
    header = json.loads(body(token_client(alice).get(path + ".json")))["conversation"]
    assert header["created_by"]["name"] == header["started_by"]["name"] == "Alice"


def test_without_a_creator_the_export_names_the_first_author(token_client, alice, bob, room
                                                             ) -> None:
    conversation = Conversation.objects.create(room=room, title="Orphan", created_by=None)
    Message.objects.create(conversation=conversation, position=1, author=bob,
                           author_name="Bob",
                           **message_fields(EngineMessage(role="user", content="Hi")))
    path = f"/api/conversations/{conversation.pk}/export"
    assert "started by Bob on" in body(token_client(alice).get(path + ".md"))
    header = json.loads(body(token_client(alice).get(path + ".json")))["conversation"]
    assert header["created_by"] is None
    assert header["started_by"] == {"id": bob.pk, "name": "Bob"}
