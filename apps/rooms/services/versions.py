"""New versions of the end of a transcript: edit your own last message, regenerate the last
answer (DESIGN 3.2).

Nothing is deleted. The replaced messages stay in the transcript, each marked
``superseded_by`` the run that replaced them, and leave the model's history
(:func:`apps.rooms.transcript.history_rows`); the new version is that run's messages. An edit
keeps the agent-mode rules of a ``send``: in a ``mention`` conversation a new text that does
not mention the agent is chat and starts no run, and the replaced messages are marked
``superseded_by_message``, the new message (the new version). Both need a writer and no
active run (``conflict``: stop it first), and are broadcast as ``messages_superseded``
``{"message_ids", "engine_ids", "run_id", "message_id", "by": PERSON}`` (``engine_ids``: the
runtime's ids of those that have one, as live streaming named them; ``run_id`` null and
``message_id`` the new message for a chat edit) preceded by the ``run_queued`` of the run that
answers and followed, for an edit, by the new ``user_message``.
"""

from __future__ import annotations

from django.db import transaction
from django.utils.translation import gettext, gettext_lazy

from apps.accounts.models import Membership
from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.rooms.images import stored_images
from apps.rooms.models import Conversation, Message, MessageStatus, Run, RunPurpose
from apps.rooms.services.access import require_writer
from apps.rooms.services.events import conversation_lock, event_append, positions_allocate
from apps.rooms.services.limits import require_fits
from apps.rooms.services.messages import calls_agent, require_message_rate
from apps.rooms.services.runs import active_run, require_turn_rate, run_queue
from apps.rooms.transcript import history_rows, message_json

__all__ = ["answer_regenerate", "message_edit"]

_BUSY = gettext_lazy("The agent is working: wait for its run to end, or stop it first.")


def _require_idle(conversation: Conversation) -> None:
    """``conflict`` while a run is active (call under :func:`conversation_lock`)."""
    if active_run(conversation) is not None:
        raise ApplicationError(ErrorCode.CONFLICT, _BUSY)


def _last_person_message(conversation: Conversation) -> Message | None:
    """The newest message of the history a person wrote (not a summary, not tool results)."""
    return (history_rows(conversation.pk).filter(role="user").exclude(author_name="")
            .order_by("-position").first())


def message_edit(*, conversation: Conversation, membership: Membership, message_id: int,
                 text: str) -> Message:
    """Replace the member's own last message with ``text``; returns the new message, with the
    old one's images. The old message and everything after it become the earlier version.
    The agent-mode rules of a ``send`` hold (:func:`~apps.rooms.services.messages.calls_agent`):
    a new text that asks for the agent (any text in an ``always`` conversation, one that
    mentions it in a ``mention`` one) runs the agent again (the message's ``run_id``: the run
    that answers it); any other is chat, which starts no run (the earlier version is marked
    ``superseded_by_message``: the new message). ApplicationError: ``not_found`` (no such
    message in this conversation), ``forbidden`` (a viewer, or someone else's message),
    ``conflict`` (not the last message a person wrote, or a run is active), ``invalid``
    (``text`` is blank: the socket's ``send`` refuses it too), ``too_large``,
    ``rate_limited``."""
    require_writer(membership)
    if not text.strip():
        raise ApplicationError(ErrorCode.INVALID,
                               gettext("The new text is blank: write something."))
    require_fits(text)
    user = membership.user
    with transaction.atomic():
        locked = conversation_lock(conversation.pk, "agent_mode")  # a switch just made counts
        old = Message.objects.filter(conversation=conversation, pk=message_id).first()
        if old is None:
            raise not_found("message")
        if old.author_id != user.pk or old.role != "user":
            raise ApplicationError(
                ErrorCode.FORBIDDEN, gettext("You can edit only your own messages."))
        _require_idle(conversation)
        last = _last_person_message(conversation)
        if last is None or last.pk != old.pk:
            raise ApplicationError(ErrorCode.CONFLICT, gettext(
                "Only the last message of the conversation can be edited."))
        require_message_rate(conversation, user)
        wakes = calls_agent(locked["agent_mode"], text, conversation.room.team.agent_handle)
        run = (run_queue(conversation=conversation, membership=membership,
                         purpose=RunPurpose.REPLY, busy=_BUSY) if wakes else None)
        new = Message.objects.create(
            conversation=conversation, run=run, role="user", author=user,
            author_name=user.shown_name, wakes_agent=wakes,
            content=[{"type": "text", "text": text}, *stored_images(old.content)],  # images stay
            status=MessageStatus.COMPLETE, position=positions_allocate(conversation.pk, 1))
        assert old.position is not None  # the history's rows have one
        _supersede(conversation, membership, from_position=old.position, run=run, new=new)
        event_append(conversation.pk, "user_message", {
            "kind": "user_message", "message": message_json(new), "queued": False},
            run_id=run.pk if run else None)
    return new


def answer_regenerate(*, conversation: Conversation, membership: Membership) -> Run:
    """Answer the last message a person wrote again: the messages after it become the earlier
    version; returns the new run. ApplicationError: ``forbidden`` (a viewer), ``conflict``
    (a run is active, or there is no answer to regenerate), ``rate_limited`` (agent turns)."""
    require_writer(membership)
    with transaction.atomic():
        conversation_lock(conversation.pk)
        _require_idle(conversation)
        last = _last_person_message(conversation)
        answer = (history_rows(conversation.pk).filter(position__gt=last.position)
                  if last is not None else Message.objects.none())
        if not answer.exists():
            raise ApplicationError(ErrorCode.CONFLICT, gettext("There is no answer to regenerate."))
        require_turn_rate(conversation, membership.user)
        run = run_queue(conversation=conversation, membership=membership,
                        purpose=RunPurpose.REPLY, busy=_BUSY)
        assert last is not None and last.position is not None
        _supersede(conversation, membership, from_position=last.position + 1, run=run)
    return run


def _supersede(conversation: Conversation, membership: Membership, *, from_position: int,
               run: Run | None, new: Message | None = None) -> None:
    """Mark the history from ``from_position`` on (but ``new``, the edit's new message) the
    earlier version of ``run``'s messages, or, without a run, of ``new`` (a chat edit), and
    broadcast it. The session notes' mark is a history index: it cannot point past the
    shorter history."""
    history = history_rows(conversation.pk)
    replaced = history.filter(position__gte=from_position)
    if new is not None:
        replaced = replaced.exclude(pk=new.pk)
    rows = list(replaced.values_list("pk", "engine_id"))
    ids = [pk for pk, _ in rows]
    if run is not None:
        Message.objects.filter(pk__in=ids).update(superseded_by=run)
    else:
        assert new is not None, "a chat edit names its new message"
        Message.objects.filter(pk__in=ids).update(superseded_by_message=new)
    kept = history.filter(position__lt=from_position).count()
    Conversation.objects.filter(pk=conversation.pk, memory_upto__gt=kept).update(
        memory_upto=kept)
    event_append(conversation.pk, "messages_superseded", {
        "kind": "messages_superseded", "message_ids": ids,
        "engine_ids": [engine_id for _, engine_id in rows if engine_id],
        "run_id": run.pk if run else None, "message_id": None if run or not new else new.pk,
        "by": {"id": membership.user_id, "name": membership.user.shown_name}},
        run_id=run.pk if run else None)
