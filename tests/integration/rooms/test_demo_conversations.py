"""``manage.py demo --json`` lists one conversation of each agent mode, on its one JSON line."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from apps.rooms.models import Conversation

pytestmark = pytest.mark.django_db


def _demo() -> dict:
    out = io.StringIO()
    call_command("demo", "--json", stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1  # exactly one JSON object on one line, nothing else
    return json.loads(lines[0])


def test_the_demo_lists_an_always_and_a_mention_conversation() -> None:
    demo = _demo()
    listed = demo["conversations"]
    assert sorted(c["agent_mode"] for c in listed) == ["always", "mention"]
    always = next(c for c in listed if c["agent_mode"] == "always")
    assert demo["conversation"] == {"id": always["id"]}
    for item in listed:
        stored = Conversation.objects.get(pk=item["id"])
        assert (stored.agent_mode, stored.title) == (item["agent_mode"], item["title"])
        assert stored.room_id == demo["room"]["id"]


def test_running_the_demo_again_keeps_the_same_conversations() -> None:
    first, second = _demo(), _demo()
    assert first["conversations"] == second["conversations"]
    assert Conversation.objects.count() == 2


def test_the_demo_switches_its_conversations_back_to_their_modes() -> None:
    first = _demo()
    welcome = Conversation.objects.get(pk=first["conversation"]["id"])
    chat = next(c for c in first["conversations"] if c["agent_mode"] == "mention")
    Conversation.objects.filter(pk=welcome.pk).update(agent_mode="mention")  # people switched
    Conversation.objects.filter(pk=chat["id"]).update(agent_mode="always")  # them both
    again = _demo()
    assert again["conversation"] == first["conversation"]  # still "Welcome", always again
    assert again["conversations"] == first["conversations"]
    assert Conversation.objects.count() == 2
