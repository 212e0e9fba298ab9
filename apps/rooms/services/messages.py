"""What people send (DESIGN 3.2): persisted before anything is acknowledged, never dropped.

A message sent while no run is active starts one; a message sent while a run is active waits as
*pending* and joins the history at the run's next step boundary. The database decides which:
``message_post`` always tries to create the run, and the partial unique constraint
(``one_active_run_per_conversation``) refuses a second active run — so two messages arriving at
two server processes at the same instant cannot start two runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts.models import Membership, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.rooms.models import Conversation, Message, MessageStatus, Run, RunStatus
from apps.rooms.services.access import require_writer
from apps.rooms.services.events import conversation_lock, event_append, positions_allocate
from apps.rooms.services.limits import require_fits
from apps.rooms.services.runs import run_dispatch_on_commit
from apps.rooms.transcript import message_json

__all__ = ["PostResult", "message_post"]


@dataclass(frozen=True, slots=True)
class PostResult:
    """``message``; ``queued``: it waits for the running run's next step; ``created``: False
    when ``client_id`` named a message already stored (a resend)."""

    message: Message
    queued: bool
    created: bool


def _rate_limit(conversation: Conversation, user: User) -> None:
    limit = settings.CONFAB["MESSAGES_PER_MINUTE"]
    since = timezone.now() - timedelta(minutes=1)
    recent = Message.objects.filter(conversation__room__team_id=conversation.room.team_id,
                                    author=user, created_at__gte=since).count()
    if recent >= limit:
        raise ApplicationError(ErrorCode.RATE_LIMITED,
                               f"At most {limit} messages a minute; wait a moment.")


def message_post(*, conversation: Conversation, membership: Membership, text: str,
                 client_id: str, attachments: list[dict[str, Any]] | None = None) -> PostResult:
    """Store ``text`` from the member, followed by ``attachments`` (content blocks, already
    read: :mod:`apps.rooms.attachments`); start a run or queue it for the running one. Raises
    ApplicationError: ``forbidden`` (a viewer), ``too_large``
    (:func:`~apps.rooms.services.limits.require_fits`),
    ``rate_limited``."""
    require_writer(membership)
    require_fits(text)
    user = membership.user
    mine = Message.objects.filter(conversation=conversation, author=user, client_id=client_id)
    existing = mine.first()
    if existing is not None:
        return PostResult(existing, existing.status == MessageStatus.PENDING, created=False)
    _rate_limit(conversation, user)
    try:
        with transaction.atomic():
            return _post(conversation, user, [{"type": "text", "text": text},
                                              *(attachments or [])], client_id)
    except IntegrityError:  # the same client_id raced in from another socket of this person
        existing = mine.get()
        return PostResult(existing, existing.status == MessageStatus.PENDING, created=False)


def _post(conversation: Conversation, user: User, content: list[dict[str, Any]],
          client_id: str) -> PostResult:
    conversation_lock(conversation.pk)
    message = Message.objects.create(
        conversation=conversation, role="user", author=user, author_name=user.shown_name,
        content=content, status=MessageStatus.PENDING,
        client_id=client_id)
    run = _start_run(conversation, user)
    if run is not None:  # it starts the run: it joins the history now
        message.run = run
        message.status = MessageStatus.COMPLETE
        message.position = positions_allocate(conversation.pk, 1)
        message.save(update_fields=["run", "status", "position"])
    payload = {"kind": "user_message", "message": message_json(message),
               "queued": run is None}
    event_append(conversation.pk, "user_message", payload, run_id=run.pk if run else None)
    if run is not None:
        event_append(conversation.pk, "run_queued", {
            "kind": "run_queued", "run_id": run.pk,
            "started_by": {"id": user.pk, "name": user.shown_name}}, run_id=run.pk)
        run_dispatch_on_commit(run)
    return PostResult(message, queued=run is None, created=True)


def _start_run(conversation: Conversation, user: User) -> Run | None:
    """A new queued run, or None when one is already active (the constraint says so)."""
    try:
        with transaction.atomic():  # a savepoint: the refusal must not spoil the outer work
            return Run.objects.create(conversation=conversation, started_by=user,
                                      status=RunStatus.QUEUED)
    except IntegrityError:
        return None
