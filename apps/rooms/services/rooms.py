"""Rooms and conversations: create, rename, archive and delete (DESIGN 3.1, 3.2).

Every writer must be a member of the object's team whose role can write: a viewer is refused
with ``forbidden``; anyone outside the team gets ``not_found``, exactly like a missing object.
Deleting a conversation is for whoever created it or a team owner/admin, never while a run is
active; its workspace directory goes once the deletion has committed.
"""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.accounts.models import Membership, Team, User
from apps.accounts.selectors import membership_of
from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.rooms.images import images_delete
from apps.rooms.models import ACTIVE_RUN_STATUSES, AgentMode, Conversation, Room, Run
from apps.rooms.names import conversation_title, room_name
from apps.rooms.services.access import require_writer
from apps.rooms.services.events import conversation_lock, event_append, person
from apps.rooms.sidebar import sidebar_changed_on_commit, sidebar_removed_on_commit
from apps.rooms.workspaces import workspace_delete, workspace_path

__all__ = [
    "conversation_archive",
    "conversation_create",
    "conversation_delete",
    "conversation_rename",
    "conversation_set_agent_mode",
    "room_archive",
    "room_create",
    "room_rename",
]

def _writer(by: User, team_id: int, what: str) -> Membership:
    """The membership of a member of the team who can write; not_found or forbidden otherwise."""
    membership = membership_of(by, team_id)
    if membership is None:
        raise not_found(what)
    require_writer(membership)
    return membership


def room_create(*, team: Team, name: str, by: User) -> Room:
    """A new room in ``team``."""
    _writer(by, team.pk, "team")
    name = room_name(name)
    return Room.objects.create(team=team, name=name, created_by=by)


def room_rename(*, room: Room, name: str, by: User) -> Room:
    """Give ``room`` a new name."""
    _writer(by, room.team_id, "room")
    room.name = room_name(name)
    room.save(update_fields=["name", "updated_at"])
    return room


def room_archive(*, room: Room, by: User) -> Room:
    """Archive ``room``: it leaves the default lists and takes no new conversations."""
    _writer(by, room.team_id, "room")
    room.archived = True
    room.save(update_fields=["archived", "updated_at"])
    return room


def _agent_mode(value: str) -> AgentMode:
    """``value`` as an :class:`AgentMode`; ``invalid`` naming the modes otherwise."""
    try:
        return AgentMode(value)
    except ValueError:
        modes = ", ".join(AgentMode.values)
        raise ApplicationError(ErrorCode.INVALID,
                               _("The agent mode is one of %(modes)s, not %(value)r.")
                               % {"modes": modes, "value": value}) from None


def conversation_create(*, room: Room, title: str, by: User,
                        agent_mode: str = AgentMode.ALWAYS) -> Conversation:
    """A new conversation in ``room`` (refused with ``conflict`` in an archived room);
    ``agent_mode``: an :class:`AgentMode` value (``invalid`` otherwise)."""
    _writer(by, room.team_id, "room")
    title = conversation_title(title)
    mode = _agent_mode(agent_mode)
    if room.archived:
        raise ApplicationError(ErrorCode.CONFLICT, _("The room is archived."))
    conversation = Conversation.objects.create(room=room, title=title, created_by=by,
                                               agent_mode=mode)
    sidebar_changed_on_commit(conversation.pk)
    return conversation


def conversation_set_agent_mode(*, conversation: Conversation, agent_mode: str,
                                by: User) -> Conversation:
    """Switch when the agent answers (DESIGN 3.2); broadcast as ``agent_mode_changed``
    ``{"agent_mode", "by": PERSON}``. Setting the mode it has changes nothing and broadcasts
    nothing. ``invalid`` for an unknown mode."""
    _writer(by, conversation.room.team_id, "conversation")
    mode = _agent_mode(agent_mode)
    with transaction.atomic():
        conversation_lock(conversation.pk)  # a message being posted reads the mode under it
        changed = Conversation.objects.filter(pk=conversation.pk).exclude(
            agent_mode=mode).update(agent_mode=mode)
        if changed:
            event_append(conversation.pk, "agent_mode_changed", {
                "kind": "agent_mode_changed", "agent_mode": mode.value, "by": person(by)})
    conversation.agent_mode = mode
    return conversation


def conversation_rename(*, conversation: Conversation, title: str, by: User) -> Conversation:
    """Give ``conversation`` a new title, broadcast as ``title_changed`` ``{"title", "by":
    PERSON}`` (the title it has changes nothing and broadcasts nothing). ``invalid`` for an
    empty or too long title."""
    _writer(by, conversation.room.team_id, "conversation")
    title = conversation_title(title)
    with transaction.atomic():
        if Conversation.objects.filter(pk=conversation.pk).exclude(title=title).update(
                title=title, updated_at=timezone.now()):
            event_append(conversation.pk, "title_changed", {
                "kind": "title_changed", "title": title, "by": person(by)})
    # as stored: the event moved last_seq, the update updated_at (the answer showed the old)
    _reread(conversation, "title", "updated_at", "last_seq")
    return conversation


def _reread(conversation: Conversation, *fields: str) -> None:
    """``fields`` of ``conversation`` as stored; ``not_found`` when it was deleted meanwhile."""
    try:
        conversation.refresh_from_db(fields=list(fields))
    except Conversation.DoesNotExist:
        raise not_found("conversation") from None


def conversation_archive(*, conversation: Conversation, by: User) -> Conversation:
    """Archive ``conversation``: it leaves the default lists; its transcript stays. Its
    watchers are told with a ``conversation_archived`` ``{"by": PERSON}`` event (archiving an
    archived one tells nobody again)."""
    _writer(by, conversation.room.team_id, "conversation")
    with transaction.atomic():
        if Conversation.objects.filter(pk=conversation.pk, archived=False).update(
                archived=True, updated_at=timezone.now()):
            event_append(conversation.pk, "conversation_archived",
                         {"kind": "conversation_archived", "by": person(by)})
    _reread(conversation, "archived", "updated_at", "last_seq")
    sidebar_removed_on_commit(conversation.room_id, conversation.pk)
    return conversation


def conversation_delete(*, conversation: Conversation, by: User) -> None:
    """Delete ``conversation`` with its transcript, runs, events, workspace directory and
    images. Its watchers are told with a last ``conversation_deleted`` ``{"by": PERSON}``
    event, broadcast once the deletion has committed (the log it was written to goes with the
    conversation, so a socket that missed it learns of the deletion as ``not_found``).

    Only its creator or a team owner/admin may (``forbidden``); refused with ``conflict`` while a
    run is active (its worker still writes the transcript and the workspace).
    """
    membership = _writer(by, conversation.room.team_id, "conversation")
    if not (membership.role_enum.can_manage or conversation.created_by_id == by.pk):
        raise ApplicationError(
            ErrorCode.FORBIDDEN,
            _("Only whoever started the conversation or a team owner or admin can delete it."))
    path = workspace_path(conversation)
    with transaction.atomic():
        conversation_lock(conversation.pk)  # no run can start between the check and the delete
        images = list(conversation.images.values_list("pk", flat=True))
        if Run.objects.filter(conversation=conversation,
                              status__in=ACTIVE_RUN_STATUSES).exists():
            raise ApplicationError(ErrorCode.CONFLICT,
                                   _("A run is active: stop it before deleting the conversation."))
        event_append(conversation.pk, "conversation_deleted",
                     {"kind": "conversation_deleted", "by": person(by)})
        conversation_id = conversation.pk  # delete() clears the pk
        conversation.delete()
        sidebar_removed_on_commit(conversation.room_id, conversation_id)
    transaction.on_commit(partial(workspace_delete, path), robust=True)
    transaction.on_commit(partial(images_delete, conversation.room.team_id, images), robust=True)
