"""Reads about rooms and conversations. Every lookup is scoped by the user's teams: another
team's object answers exactly like a missing one (``not_found``, DESIGN 3.1)."""

from __future__ import annotations

from django.db.models import QuerySet

from apps.accounts.models import Membership, User
from apps.common.errors import not_found
from apps.rooms.models import Conversation, Room


def rooms_for(user: User) -> QuerySet[Room]:
    """Rooms of every team the user is in."""
    return Room.objects.filter(team__memberships__user=user)


def conversations_for(user: User) -> QuerySet[Conversation]:
    """Conversations of every team the user is in."""
    return Conversation.objects.filter(room__team__memberships__user=user)


def room_for(user: User, room_id: int) -> Room:
    """The room, if the user is in its team; ApplicationError(not_found) otherwise."""
    room = rooms_for(user).select_related("team").filter(pk=room_id).first()
    if room is None:
        raise not_found("room")
    return room


def conversation_for(user: User, conversation_id: int) -> tuple[Conversation, Membership]:
    """The conversation and the user's membership of its team; not_found otherwise."""
    if not user.is_authenticated:
        raise not_found("conversation")
    conversation = (Conversation.objects.select_related("room__team")
                    .filter(pk=conversation_id).first())
    if conversation is None:
        raise not_found("conversation")
    membership = Membership.objects.filter(user=user, team_id=conversation.room.team_id).first()
    if membership is None:
        raise not_found("conversation")
    return conversation, membership
