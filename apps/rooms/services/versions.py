"""New versions of the end of a transcript: edit your own last message, regenerate the last
answer (DESIGN 3.2).

Nothing is deleted. The replaced messages stay in the transcript, each marked
``superseded_by`` the run that replaced them, and leave the model's history
(:func:`apps.rooms.transcript.history_rows`); the new version is that run's messages. Both
need a writer and no active run (``conflict``: stop it first), and are broadcast as
``messages_superseded`` ``{"message_ids", "engine_ids", "run_id", "by": PERSON}``
(``engine_ids``: the runtime's ids of those that have one, as live streaming named them)
followed, for an edit, by the new ``user_message``, and the ``run_queued`` of the run that
answers.
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
from apps.rooms.services.messages import require_message_rate
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
    """Replace the member's own last message with ``text`` and run the agent on it again;
    returns the new message (``run_id``: the run that answers it), with the old one's images.
    The old message and
    everything after it become the earlier version. ApplicationError: ``not_found`` (no such
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
        conversation_lock(conversation.pk)
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
        run = run_queue(conversation=conversation, membership=membership,
                        purpose=RunPurpose.REPLY, busy=_BUSY)
        _supersede(conversation, run, membership, from_position=old.position)
        new = Message.objects.create(
            conversation=conversation, run=run, role="user", author=user,
            author_name=user.shown_name,
            content=[{"type": "text", "text": text}, *stored_images(old.content)],  # images stay
            status=MessageStatus.COMPLETE, position=positions_allocate(conversation.pk, 1))
        event_append(conversation.pk, "user_message", {
            "kind": "user_message", "message": message_json(new), "queued": False},
            run_id=run.pk)
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
        _supersede(conversation, run, membership, from_position=last.position + 1)
    return run


def _supersede(conversation: Conversation, run: Run, membership: Membership, *,
               from_position: int | None) -> None:
    """Mark the history from ``from_position`` on superseded by ``run`` and broadcast it.
    The session notes' mark is a history index: it cannot point past the shorter history."""
    rows = list(history_rows(conversation.pk).filter(position__gte=from_position)
                .values_list("pk", "engine_id"))
    ids = [pk for pk, _ in rows]
    Message.objects.filter(pk__in=ids).update(superseded_by=run)
    kept = history_rows(conversation.pk).count()
    Conversation.objects.filter(pk=conversation.pk, memory_upto__gt=kept).update(
        memory_upto=kept)
    event_append(conversation.pk, "messages_superseded", {
        "kind": "messages_superseded", "message_ids": ids,
        "engine_ids": [engine_id for _, engine_id in rows if engine_id], "run_id": run.pk,
        "by": {"id": membership.user_id, "name": membership.user.shown_name}}, run_id=run.pk)
