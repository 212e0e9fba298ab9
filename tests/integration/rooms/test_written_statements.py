"""The statements written out for speed (issue 20) answer as their ORM forms did: the next
history position (compacted messages do not count) and whether a message is pending. Run on
SQLite here and on PostgreSQL by ``tests/postgres/test_written_statements.py``."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models import Max

from apps.accounts.models import Team
from apps.rooms.models import Conversation, Message, MessageStatus, Room
from apps.rooms.ports import messages_waiting, pending_rows
from apps.rooms.services.events import positions_allocate

pytestmark = pytest.mark.django_db


def _conversations() -> tuple[Conversation, Conversation]:
    team = Team.objects.create(name="Statements", slug="statements")
    room = Room.objects.create(team=team, name="r")
    return (Conversation.objects.create(room=room), Conversation.objects.create(room=room))


def _message(conversation: Conversation, **fields: object) -> Message:
    return Message.objects.create(conversation=conversation, role="user", **fields)


def test_the_next_position_follows_the_last_that_is_not_compacted() -> None:
    mine, other = _conversations()
    with transaction.atomic():
        assert positions_allocate(mine.pk, 1) == 1  # an empty history
    _message(mine, position=3)
    _message(mine, position=9, compacted=True)  # replaced by its summary: not counted
    _message(mine, position=None, status=MessageStatus.PENDING)
    _message(other, position=40)
    with transaction.atomic():
        assert positions_allocate(mine.pk, 2) == 4
    orm = (Message.objects.filter(conversation=mine, compacted=False)
           .aggregate(m=Max("position"))["m"])
    assert orm + 1 == 4


def test_a_pending_message_is_seen_only_in_its_own_conversation() -> None:
    mine, other = _conversations()
    _message(mine, position=1)
    _message(other, status=MessageStatus.PENDING)
    assert not messages_waiting(mine.pk) and messages_waiting(other.pk)
    waiting = _message(mine, status=MessageStatus.PENDING)
    assert messages_waiting(mine.pk) == pending_rows(mine.pk).exists() is True
    Message.objects.filter(pk=waiting.pk).update(status=MessageStatus.COMPLETE)
    assert not messages_waiting(mine.pk)
