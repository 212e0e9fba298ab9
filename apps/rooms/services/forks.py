"""Forks: a new conversation in the same room that starts from another one's history.

The fork's transcript is a copy of the source's history up to and including the chosen message
(earlier versions left out, compacted messages and their summary kept as they are), with the
messages' authors and times; not the workspace files, not the session notes, not the runs.
Where it came from is recorded both ways: the fork's ``forked_from`` message, the message's
``forks``, and a ``conversation_forked`` ``{"conversation_id", "title", "message_id",
"engine_id", "by": PERSON}`` event in the source conversation (``engine_id``: the message's, as
live streaming named it, or null). The fork is titled "<title> (fork)" so that the two can be
told apart in the sidebar and in search; a conversation still called "New conversation" keeps
that, to be titled automatically after its next exchange.
"""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext as _

from apps.accounts.models import Membership
from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.rooms.images import images_fork
from apps.rooms.models import CURRENT_VERSION, Conversation, Message, MessageStatus
from apps.rooms.names import CONVERSATION_TITLE_MAX
from apps.rooms.services.access import require_writer
from apps.rooms.services.events import event_append
from apps.rooms.services.rooms import conversation_create
from apps.rooms.titles import DEFAULT_TITLE

__all__ = ["conversation_fork", "fork_title"]

_COPIED = ("position", "role", "author_id", "author_name", "content", "reasoning_content",
           "provider", "model", "status", "engine_id", "compacted", "usage", "wakes_agent",
           "search_text")
"""The columns a fork's copy keeps (not the run, which stays with the source, nor the
``client_id``: a resend to the fork is a new message)."""


def _fork_point(conversation: Conversation, message_id: int) -> Message:
    """The complete message of the history to fork at. ``not_found`` when it is not in
    ``conversation``; ``conflict`` when it is not complete or not part of the history."""
    message = Message.objects.filter(conversation=conversation, pk=message_id).first()
    if message is None:
        raise not_found("message")
    if message.status in (MessageStatus.PENDING, MessageStatus.STREAMING):
        raise ApplicationError(ErrorCode.CONFLICT,
                               _("That message is not complete yet: fork once it is."))
    if message.status != MessageStatus.COMPLETE or message.position is None:
        raise ApplicationError(ErrorCode.CONFLICT, _(
            "That message was stopped before it was complete: fork from an earlier one."))
    if message.earlier_version:
        raise ApplicationError(ErrorCode.CONFLICT,
                               _("That message is an earlier version: fork from the current one."))
    if message.compacted:
        raise ApplicationError(ErrorCode.CONFLICT, _(
            "That message was compacted into a summary: fork from the summary or a later "
            "message."))
    if _has_open_calls(message):
        raise ApplicationError(ErrorCode.CONFLICT, _(
            "That answer's tool calls have not finished yet: fork once they have."))
    return message


def _has_open_calls(message: Message) -> bool:
    """Whether ``message`` belongs to a run still going (working, or waiting for a decision or
    an answer) and has a ``tool_use`` block whose ``tool_result`` is not stored yet: a fork
    there would end on a call that never gets a result (issue 19 refuses a message "still
    streaming or pending")."""
    if message.run is None or not message.run.active:
        return False
    calls = {b.get("id") for b in message.content or []
             if isinstance(b, dict) and b.get("type") == "tool_use"}
    if not calls:
        return False
    answered = {b.get("tool_use_id")
                for later in Message.objects.filter(conversation_id=message.conversation_id,
                                                    position__gt=message.position)
                for b in later.content or [] if isinstance(b, dict)
                and b.get("type") == "tool_result"}
    return not calls <= answered


def fork_title(title: str) -> str:
    """``title`` marked as a fork's ("Plans (fork)", in the active language), cut to fit
    :data:`~apps.rooms.names.CONVERSATION_TITLE_MAX`; the default title stays as it is."""
    if title == DEFAULT_TITLE:
        return title
    suffix = len(_("%(title)s (fork)") % {"title": ""})
    return _("%(title)s (fork)") % {"title": title[:CONVERSATION_TITLE_MAX - suffix].rstrip()}


def conversation_fork(*, conversation: Conversation, membership: Membership,
                      message_id: int) -> Conversation:
    """A new conversation in ``conversation``'s room (its agent mode, its title marked as a
    fork's: :func:`fork_title`) whose history
    is ``conversation``'s up to and including message ``message_id``. ApplicationError:
    ``forbidden`` (a viewer), ``not_found`` (no such message in this conversation),
    ``conflict`` (the message is streaming, pending, stopped, an earlier version or compacted,
    or its tool calls are still open in an active run; or the room is archived)."""
    require_writer(membership)
    with transaction.atomic():
        point = _fork_point(conversation, message_id)
        fork = conversation_create(room=conversation.room, title=fork_title(conversation.title),
                                   by=membership.user, agent_mode=conversation.agent_mode)
        fork.forked_from = point
        fork.save(update_fields=["forked_from"])
        _copy_history(conversation, fork, upto=point)
        event_append(conversation.pk, "conversation_forked", {
            "kind": "conversation_forked", "conversation_id": fork.pk, "title": fork.title,
            "message_id": point.pk, "engine_id": point.engine_id or None,
            "by": {"id": membership.user_id, "name": membership.user.shown_name}})
    return fork


def _copy_history(source: Conversation, fork: Conversation, *, upto: Message) -> None:
    """Copy ``source``'s history up to ``upto`` into ``fork``, keeping when each was written
    (a copy is not a new message: it must not count towards anyone's rate limit)."""
    rows = list(Message.objects.filter(CURRENT_VERSION, conversation=source,
                                       position__isnull=False, position__lte=upto.position)
                .order_by("position", "id"))
    contents = images_fork(source, fork, [row.content for row in rows])
    copies = Message.objects.bulk_create([
        Message(conversation=fork, **{**{name: getattr(row, name) for name in _COPIED},
                                      "content": content})
        for row, content in zip(rows, contents, strict=True)])
    for copy, row in zip(copies, rows, strict=True):
        copy.created_at = row.created_at
    Message.objects.bulk_update(copies, ["created_at"])  # auto_now_add set "now" on insert
