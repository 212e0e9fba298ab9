"""What people send (DESIGN 3.2): persisted before anything is acknowledged, never dropped.

A message that asks for the agent (every message in an ``always`` conversation; one that
mentions it, :mod:`apps.rooms.mentions`, in a ``mention`` one) starts a run when none is active,
or waits as *pending* and steers the run at its next step boundary. The people's chat in a
``mention`` conversation starts nothing: it joins the history at once, or, while a run is
active, waits as pending to join as context before the model's next call. The database decides
whether a run starts:
``message_post`` always tries to create the run, and the partial unique constraint
(``one_active_run_per_conversation``) refuses a second active run — so two messages arriving at
two server processes at the same instant cannot start two runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.db import IntegrityError, transaction

from apps.accounts.models import Membership, User
from apps.common.errors import not_found
from apps.rooms.mentions import mentions_agent
from apps.rooms.models import (
    AgentMode,
    Conversation,
    ConversationEvent,
    Message,
    MessageStatus,
    Run,
    RunStatus,
)
from apps.rooms.services.access import require_writer
from apps.rooms.services.events import conversation_lock, events_append, positions_allocate
from apps.rooms.services.limits import require_fits, require_under_rate
from apps.rooms.services.runs import active_run, run_dispatch_on_commit
from apps.rooms.transcript import message_json

__all__ = ["PostResult", "RunEffect", "calls_agent", "message_post", "require_message_rate"]

RunEffect = Literal["started", "steering", "none"]
"""What a message did to the agent: started a run, steers the active one, or nothing (chat)."""


@dataclass(frozen=True, slots=True)
class PostResult:
    """``message``; ``queued``: it waits for the running run's next step; ``created``: False
    when ``client_id`` named a message already stored (a resend); ``run``: its
    :data:`RunEffect` (``ack.run`` on the socket)."""

    message: Message
    queued: bool
    created: bool
    run: RunEffect


def require_message_rate(conversation: Conversation, user: User) -> None:
    """Refuse (``rate_limited``) a person past the team's messages a minute."""
    require_under_rate(Message.objects.filter(
        conversation__room__team_id=conversation.room.team_id, author=user), "messages")


def message_post(*, conversation: Conversation, membership: Membership, text: str,
                 client_id: str, attachments: list[dict[str, Any]] | None = None) -> PostResult:
    """Store ``text`` from the member, followed by ``attachments`` (content blocks, already
    read: :mod:`apps.rooms.attachments`; images checked:
    :func:`apps.rooms.images.images_attached`); start a run or queue it for the running one.
    Raises ApplicationError: ``forbidden`` (a viewer), ``too_large``
    (:func:`~apps.rooms.services.limits.require_fits`), ``rate_limited``, ``not_found`` (the
    conversation was deleted meanwhile)."""
    require_writer(membership)
    require_fits(text)
    user = membership.user
    mine = Message.objects.filter(conversation=conversation, author=user, client_id=client_id)
    existing = mine.first()
    if existing is not None:
        return _resent(existing)
    require_message_rate(conversation, user)
    try:
        with transaction.atomic():
            return _post(conversation, user, text, client_id, attachments or [])
    except IntegrityError:  # the same client_id raced in from another socket of this person
        return _resent(mine.get())


def _resent(message: Message) -> PostResult:
    """The answer the first send of ``message`` got (its ``user_message`` event says whether
    it waited)."""
    waited = (ConversationEvent.objects.filter(conversation_id=message.conversation_id,
                                               kind="user_message",
                                               payload__message__id=message.pk)
              .values_list("payload__queued", flat=True).first())
    effect: RunEffect = ("none" if not message.wakes_agent
                         else "steering" if waited else "started")
    return PostResult(message, message.status == MessageStatus.PENDING, created=False,
                      run=effect)


def calls_agent(agent_mode: str, text: str, handle: str) -> bool:
    """Whether ``text`` asks for the agent in a conversation in ``agent_mode`` (read under
    :func:`~apps.rooms.services.events.conversation_lock`: a switch that just committed
    counts): every text in ``always`` mode, one that mentions it (``@agent`` or ``@`` plus the
    team's ``handle``) in ``mention`` mode."""
    return agent_mode == AgentMode.ALWAYS or mentions_agent(text, handle)


def _post(conversation: Conversation, user: User, text: str, client_id: str,
          attachments: list[dict[str, Any]]) -> PostResult:
    # the agent mode read under the lock: a switch that just committed counts
    locked = conversation_lock(conversation.pk, "agent_mode")
    if not locked:
        raise not_found("conversation")  # deleted since the socket's check
    wakes = calls_agent(locked["agent_mode"], text, conversation.room.team.agent_handle)
    run = _start_run(conversation, user) if wakes else None
    # it starts the run, or it is chat with no run going: it joins the history now
    joins = run is not None or (not wakes and active_run(conversation) is None)
    words = [{"type": "text", "text": text}] if text else []  # providers refuse empty text
    message = Message.objects.create(
        conversation=conversation, role="user", author=user, author_name=user.shown_name,
        content=[*words, *attachments], client_id=client_id, wakes_agent=wakes, run=run,
        status=MessageStatus.COMPLETE if joins else MessageStatus.PENDING,
        position=positions_allocate(conversation.pk, 1) if joins else None)
    events = [("user_message", {"kind": "user_message", "message": message_json(message),
                                "queued": not joins})]
    if run is not None:
        events.append(("run_queued", {"kind": "run_queued", "run_id": run.pk,
                                      "started_by": {"id": user.pk, "name": user.shown_name}}))
    # one seq allocation and one INSERT for both (they share the run)
    events_append(conversation.pk, events, run_id=run.pk if run else None)
    if run is not None:
        run_dispatch_on_commit(run, counted=True)
    effect: RunEffect = "started" if run else "steering" if wakes else "none"
    return PostResult(message, queued=not joins, created=True, run=effect)


def _start_run(conversation: Conversation, user: User) -> Run | None:
    """A new queued run, its dispatch counted (:func:`run_dispatch_on_commit`), or None when
    one is already active (the constraint says so)."""
    try:
        with transaction.atomic():  # a savepoint: the refusal must not spoil the outer work
            return Run.objects.create(conversation=conversation, started_by=user,
                                      status=RunStatus.QUEUED, dispatches=1)
    except IntegrityError:
        return None
