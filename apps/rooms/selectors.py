"""Reads about rooms and conversations. Every lookup is scoped by the user's teams: another
team's object answers exactly like a missing one (``not_found``, DESIGN 3.1)."""

from __future__ import annotations

from django.db.models import Count, F, Prefetch, Q, QuerySet

from apps.accounts.models import Membership, User
from apps.accounts.selectors import membership_of
from apps.common.errors import not_found
from apps.rooms.models import Conversation, ConversationEvent, Message, Room, Run


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


def member_conversation(user: User, team_id: int, conversation_id: int
                        ) -> tuple[Membership | None, Conversation | None]:
    """For a socket's frame, in one thread hop: the user's membership of team ``team_id``
    (with its team and user; None when not a member, also for anonymous users) and, for a
    member, the conversation ``conversation_id`` of that team with its room and team (None
    when it is gone or another team's)."""
    membership = membership_of(user, team_id)
    if membership is None:
        return None, None
    conversation = (Conversation.objects.select_related("room__team")
                    .filter(pk=conversation_id, room__team__id=team_id).first())
    return membership, conversation


def room_list(*, user: User, team_id: int | None = None,
              archived: bool = False) -> QuerySet[Room]:
    """The user's rooms by name (only archived ones with ``archived``), of one team if given."""
    rooms = rooms_for(user).filter(archived=archived).select_related("team")
    if team_id is not None:
        rooms = rooms.filter(team__id=team_id)  # team__id: see membership_of
    return rooms.order_by("name", "id")


def conversation_list(*, room: Room, archived: bool = False) -> QuerySet[Conversation]:
    """The room's conversations, newest first (only archived ones with ``archived``)."""
    return (Conversation.objects.filter(room=room, archived=archived)
            .select_related("room", "created_by").order_by("-created_at", "-id"))


def room_overview(*, user: User, team_id: int, per_room: int = 10) -> list[Room]:
    """The team's rooms by name, each with ``recent_conversations`` (its newest ``per_room``
    conversations that are not archived) and ``conversation_count``. Empty when the user is not
    in the team."""
    recent = (Conversation.objects.filter(archived=False)
              .order_by("-created_at", "-id")[:per_room])
    rooms = (room_list(user=user, team_id=team_id)
             .annotate(conversation_count=Count("conversations",
                                                filter=Q(conversations__archived=False)))
             .prefetch_related(Prefetch("conversations", queryset=recent,
                                        to_attr="recent_conversations")))
    return list(rooms)


def last_run(conversation: Conversation) -> Run | None:
    """The conversation's latest run (active or not), with who started and stopped it."""
    return (Run.objects.filter(conversation=conversation)
            .select_related("started_by", "stopped_by").order_by("-id").first())


def transcript_messages(conversation: Conversation) -> QuerySet[Message]:
    """Every message of the transcript, compacted ones included, in history order; pending
    messages (not yet in the history) last, in arrival order."""
    return (Message.objects.filter(conversation=conversation)
            .order_by(F("position").asc(nulls_last=True), "id"))


def transcript_runs(conversation: Conversation) -> QuerySet[Run]:
    """The conversation's runs, oldest first, with who started and stopped them and the tool
    decisions taken during each."""
    return (Run.objects.filter(conversation=conversation)
            .select_related("started_by", "stopped_by")
            .prefetch_related("decisions__decided_by").order_by("id"))


def transcript_wiki_changes(conversation: Conversation) -> QuerySet[ConversationEvent]:
    """The ``wiki_changed`` events of the conversation (the agent's commits to the team wiki),
    in log order."""
    return (ConversationEvent.objects.filter(conversation=conversation, kind="wiki_changed")
            .order_by("seq"))
