"""Rooms: list, get, create, rename, archive; a room's conversations: list and create.

Every room is looked up through the caller's teams: another team's room is ``404`` exactly like
a missing one. Writes need a role that can write (viewers get ``403``).
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Router, Status
from ninja.pagination import paginate

from apps.accounts.selectors import membership_of
from apps.api.pagination import Page
from apps.api.schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    ConversationCreateIn,
    ConversationOut,
    ErrorOut,
    RoomCreateIn,
    RoomOut,
    RoomRenameIn,
)
from apps.common.errors import not_found
from apps.rooms.models import Conversation, Room
from apps.rooms.selectors import conversation_list, room_for, room_list
from apps.rooms.services.rooms import conversation_create, room_archive, room_create, room_rename

router = Router(tags=["rooms"])


@router.get("/rooms", response={200: list[RoomOut], READ_ERRORS: ErrorOut})
@paginate(Page)
def list_rooms(request: HttpRequest, team_id: int | None = None,
               archived: bool = False) -> QuerySet[Room]:
    """The rooms of your teams by name; ``team_id`` keeps one team's, ``archived=true`` lists
    the archived ones instead."""
    return room_list(user=request.auth, team_id=team_id, archived=archived)


@router.post("/rooms", response={201: RoomOut, WRITE_ERRORS: ErrorOut})
def create_room(request: HttpRequest, payload: RoomCreateIn) -> Status[Room]:
    """Create a room in one of your teams (viewers cannot)."""
    membership = membership_of(request.auth, payload.team_id)
    if membership is None:
        raise not_found("team")
    return Status(201, room_create(team=membership.team, name=payload.name, by=request.auth))


@router.get("/rooms/{room_id}", response={200: RoomOut, READ_ERRORS: ErrorOut})
def get_room(request: HttpRequest, room_id: int) -> Room:
    """One room."""
    return room_for(request.auth, room_id)


@router.patch("/rooms/{room_id}", response={200: RoomOut, WRITE_ERRORS: ErrorOut})
def rename_room(request: HttpRequest, room_id: int, payload: RoomRenameIn) -> Room:
    """Rename a room."""
    return room_rename(room=room_for(request.auth, room_id), name=payload.name, by=request.auth)


@router.post("/rooms/{room_id}/archive",
             response={200: RoomOut, WRITE_ERRORS: ErrorOut})
def archive_room(request: HttpRequest, room_id: int) -> Room:
    """Archive a room: it leaves the default list and takes no new conversations."""
    return room_archive(room=room_for(request.auth, room_id), by=request.auth)


@router.get("/rooms/{room_id}/conversations",
            response={200: list[ConversationOut], READ_ERRORS: ErrorOut})
@paginate(Page)
def list_conversations(request: HttpRequest, room_id: int,
                       archived: bool = False) -> QuerySet[Conversation]:
    """The room's conversations, newest first; ``archived=true`` lists the archived ones."""
    return conversation_list(room=room_for(request.auth, room_id), archived=archived)


@router.post("/rooms/{room_id}/conversations",
             response={201: ConversationOut, WRITE_ERRORS: ErrorOut})
def create_conversation(request: HttpRequest, room_id: int,
                        payload: ConversationCreateIn) -> Status[Conversation]:
    """Start a conversation in a room (not in an archived one: ``409``)."""
    room = room_for(request.auth, room_id)
    return Status(201, conversation_create(room=room, title=payload.title, by=request.auth,
                                           agent_mode=payload.agent_mode))
