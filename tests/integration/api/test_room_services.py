"""Room and conversation services, called directly (as the web pages and sockets do)."""

from __future__ import annotations

import pytest

from apps.common.errors import ApplicationError, ErrorCode
from apps.rooms.models import Conversation
from apps.rooms.services.rooms import (
    conversation_archive,
    conversation_create,
    conversation_delete,
    conversation_rename,
    room_archive,
    room_create,
    room_rename,
)

pytestmark = pytest.mark.django_db


def _refused(code: ErrorCode, call, **kwargs) -> None:
    with pytest.raises(ApplicationError) as caught:
        call(**kwargs)
    assert caught.value.code == code


def test_members_who_can_write_create_rooms_and_conversations(acme, bob):
    room = room_create(team=acme, name="  Ops  ", by=bob)
    conversation = conversation_create(room=room, title="Incident", by=bob)
    assert (room.name, room.created_by, room.team) == ("Ops", bob, acme)
    assert (conversation.title, conversation.created_by) == ("Incident", bob)


@pytest.mark.parametrize("who, code", [("carol", ErrorCode.FORBIDDEN),
                                       ("charlie", ErrorCode.NOT_FOUND)])
def test_viewers_are_forbidden_and_outsiders_see_nothing(request, who, code, acme, globex,
                                                         room, conversation):
    by = request.getfixturevalue(who)
    _refused(code, room_create, team=acme, name="x", by=by)
    _refused(code, room_rename, room=room, name="x", by=by)
    _refused(code, room_archive, room=room, by=by)
    _refused(code, conversation_create, room=room, title="x", by=by)
    _refused(code, conversation_rename, conversation=conversation, title="x", by=by)
    _refused(code, conversation_archive, conversation=conversation, by=by)
    _refused(code, conversation_delete, conversation=conversation, by=by)
    room.refresh_from_db()
    conversation.refresh_from_db()
    assert (room.name, room.archived, conversation.title) == ("General", False, "Plans")


def test_an_owner_deletes_a_members_conversation(alice, bob, room):
    conversation = conversation_create(room=room, title="Bob's", by=bob)
    conversation_delete(conversation=conversation, by=alice)
    assert not Conversation.objects.exists()


def test_names_are_checked(acme, bob, room):
    _refused(ErrorCode.INVALID, room_create, team=acme, name=" ", by=bob)
    _refused(ErrorCode.INVALID, room_rename, room=room, name="x" * 101, by=bob)
    _refused(ErrorCode.INVALID, conversation_create, room=room, title="", by=bob)
