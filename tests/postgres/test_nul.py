"""NUL in REST requests against PostgreSQL (issue 19 review), which cannot store U+0000 in
``text`` or ``jsonb`` (apps/common/storable.py): a title, a room name, an edit or a search
with NUL used to be a 500 here (and stored as is on SQLite); each is ``invalid`` now and the
database is left as it was (tests/integration/api/test_nul.py checks every field)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from apps.accounts.models import Membership, Role, Team
from apps.rooms.models import Conversation, Message, Room
from tests.integration.personas import make_user, mint_token

pytestmark = pytest.mark.django_db


def test_nul_in_rest_bodies_and_queries_is_invalid_on_postgres() -> None:
    alice = make_user("alice")
    team = Team.objects.create(name="Acme", slug="acme")
    Membership.objects.create(team=team, user=alice, role=Role.OWNER)
    room = Room.objects.create(team=team, name="General", created_by=alice)
    conversation = Conversation.objects.create(room=room, title="Plans", created_by=alice)
    said = Message.objects.create(conversation=conversation, role="user", position=1,
                                  author=alice, author_name="Alice",
                                  content=[{"type": "text", "text": "hello"}])
    client = Client(headers={"Authorization": f"Bearer {mint_token(alice)}"})

    def send(method: str, path: str, body: dict) -> object:
        return getattr(client, method)(path, data=json.dumps(body),
                                       content_type="application/json")

    responses = [
        send("patch", f"/api/conversations/{conversation.pk}", {"title": "a\u0000b"}),
        send("post", f"/api/rooms/{room.pk}/conversations", {"title": "nul\u0000title"}),
        send("post", "/api/rooms", {"team_id": team.pk, "name": "nul\u0000room"}),
        send("post", f"/api/conversations/{conversation.pk}/messages/{said.pk}/edit",
             {"text": "nul\u0000in edit"}),
        client.get("/api/search", {"q": "a\x00b"}),
        client.get(f"/api/conversations/{conversation.pk}/images/a\x00b"),
    ]
    assert [(r.status_code, r.json()["code"]) for r in responses] == [(400, "invalid")] * 6
    assert list(Conversation.objects.values_list("title", flat=True)) == ["Plans"]
    assert list(Room.objects.values_list("name", flat=True)) == ["General"]
    assert list(Message.objects.values_list("pk", flat=True)) == [said.pk]
