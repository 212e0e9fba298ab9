"""The conversation's current state: what a client gets on connecting without ``after_seq``.

Read in one snapshot (REPEATABLE READ on PostgreSQL; one read transaction on SQLite) together
with ``seq``: the messages already include every event up to ``seq`` — the streaming message
its text so far — and the client applies live events after ``seq`` on top.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.accounts.models import Membership
from apps.rooms.history import messages_page
from apps.rooms.models import Conversation, ConversationEvent, Run
from apps.rooms.services.configure import conversation_settings, model_choices
from apps.rooms.services.runs import active_run, waiting_for

__all__ = ["conversation_state", "run_json"]


def run_json(run: Run) -> dict[str, Any]:
    """A run as clients see it."""
    def person(user: Any) -> dict[str, Any] | None:
        return {"id": user.pk, "name": user.shown_name} if user else None

    return {"id": run.pk, "status": run.status, "model": run.model or None,
            "started_by": person(run.started_by), "stopped_by": person(run.stopped_by),
            "error_kind": run.error_kind or None, "reasoning": run.reasoning}


def conversation_state(conversation_id: int, membership: Membership) -> dict[str, Any]:
    """``{"type": "state", "seq", "conversation", "you", "messages", "before", "run",
    "waiting", "todos", "wiki_changes", "forks", "compaction", "usage", "models"}`` — see
    docs/protocol.md;
    ``messages`` is the newest page (:mod:`apps.rooms.history`)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conversation = Conversation.objects.select_related("room__team").get(pk=conversation_id)
        run = active_run(conversation)
        if run is not None:
            run = Run.objects.select_related("started_by", "stopped_by").get(pk=run.pk)
        page = messages_page(conversation_id, run=run)
        return {
            "type": "state",
            "seq": conversation.last_seq,
            "conversation": {"id": conversation.pk, "title": conversation.title,
                             "agent_mode": conversation.agent_mode,
                             "settings": conversation_settings(conversation),
                             "room": {"id": conversation.room_id, "name": conversation.room.name},
                             "team": {"id": conversation.room.team_id,
                                      "name": conversation.room.team.name}},
            "you": {"id": membership.user_id, "name": membership.user.shown_name,
                    "role": membership.role},
            "messages": page.messages,
            "before": page.before,
            "run": {**run_json(run), "turn": _turn(run)} if run else None,
            "waiting": waiting_for(run),
            "todos": _todos(conversation_id),
            "wiki_changes": page.wiki_changes,
            "forks": page.forks,
            "compaction": _compaction(conversation),
            "usage": _usage(conversation_id),
            "models": model_choices(conversation.room.team),
        }


def _turn(run: Run) -> int | None:
    """The active run's step (its last ``turn_started``), None before its first."""
    payload = (ConversationEvent.objects.filter(run_id=run.pk, kind="turn_started")
               .order_by("-seq").values_list("payload", flat=True).first())
    return payload["turn"] if payload else None


def _usage(conversation_id: int) -> dict[str, Any] | None:
    """The last ``usage`` event's ``{"usage", "context_tokens", "context_window"}`` (how full
    the context was at the last model call), None before the first."""
    payload = (ConversationEvent.objects.filter(conversation_id=conversation_id, kind="usage")
               .order_by("-seq").values_list("payload", flat=True).first())
    if payload is None:
        return None
    return {key: payload[key] for key in ("usage", "context_tokens", "context_window")}


def _compaction(conversation: Conversation) -> dict[str, Any]:
    """The breaker (DESIGN 2.6): ``failures`` in a row, and ``paused_until`` (ISO 8601) while
    automatic compaction waits after three, else None."""
    until = conversation.compaction_paused_until
    return {"failures": conversation.compaction_failures,
            "paused_until": until.isoformat() if until and until > timezone.now() else None}


def _todos(conversation_id: int) -> list[dict[str, str]]:
    last = (ConversationEvent.objects.filter(conversation_id=conversation_id,
                                             kind="todos_updated")
            .order_by("-seq").values_list("payload", flat=True).first())
    return last["todos"] if last else []
