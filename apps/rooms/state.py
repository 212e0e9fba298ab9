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
from apps.rooms.models import Conversation, ConversationEvent, Message, Run, ToolDecision
from apps.rooms.services.runs import active_run, waiting_for
from apps.rooms.transcript import message_json

__all__ = ["WIKI_CHANGES_SHOWN", "conversation_state", "run_json"]

WIKI_CHANGES_SHOWN = 200
"""The latest ``wiki_changed`` events a state frame carries (the rest are in the log)."""


def run_json(run: Run) -> dict[str, Any]:
    """A run as clients see it."""
    def person(user: Any) -> dict[str, Any] | None:
        return {"id": user.pk, "name": user.shown_name} if user else None

    return {"id": run.pk, "status": run.status, "model": run.model or None,
            "started_by": person(run.started_by), "stopped_by": person(run.stopped_by),
            "error_kind": run.error_kind or None}


def conversation_state(conversation_id: int, membership: Membership) -> dict[str, Any]:
    """``{"type": "state", "seq", "conversation", "you", "messages", "run", "waiting",
    "todos", "wiki_changes", "compaction", "usage"}`` — see docs/protocol.md."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        conversation = Conversation.objects.select_related("room__team").get(pk=conversation_id)
        messages = Message.objects.filter(conversation=conversation).order_by("position", "id")
        run = active_run(conversation)
        if run is not None:
            run = Run.objects.select_related("started_by", "stopped_by").get(pk=run.pk)
        return {
            "type": "state",
            "seq": conversation.last_seq,
            "conversation": {"id": conversation.pk, "title": conversation.title,
                             "room": {"id": conversation.room_id, "name": conversation.room.name},
                             "team": {"id": conversation.room.team_id,
                                      "name": conversation.room.team.name}},
            "you": {"id": membership.user_id, "name": membership.user.shown_name,
                    "role": membership.role},
            "messages": _with_results(
                _with_decisions([message_json(m) for m in _in_order(list(messages))]), run),
            "run": {**run_json(run), "turn": _turn(run)} if run else None,
            "waiting": waiting_for(run),
            "todos": _todos(conversation_id),
            "wiki_changes": _wiki_changes(conversation_id),
            "compaction": _compaction(conversation),
            "usage": _usage(conversation_id),
        }


def _with_decisions(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each decided ``tool_use`` block carrying ``decision`` (``approved``,
    ``denied`` or ``timed_out``) and ``decided_by`` (``{"id", "name"}``; null for a timeout
    or a deleted account). Copies of the blocks: the stored content stays verbatim. Read for
    the runs of these messages only, so the frame grows with what it carries, not with the
    conversation."""
    uses = {b["id"]: b for m in messages for b in m["content"] or []
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id")}
    runs = {m["run_id"] for m in messages if m["run_id"] is not None}
    if not uses or not runs:
        return messages
    decided: dict[str, dict[str, Any]] = {}
    for call_id, payload in (ConversationEvent.objects  # timeouts: only the event has them
                             .filter(run_id__in=runs, kind="approval_decided")
                             .values_list("payload__call_id", "payload")):
        if call_id in uses and payload.get("decided_by") is None and not payload["approved"]:
            decided[call_id] = {"decision": "timed_out", "decided_by": None}
    for row in (ToolDecision.objects.filter(run_id__in=runs, tool_call_id__in=list(uses))
                .select_related("decided_by")):
        by = row.decided_by
        decided[row.tool_call_id] = {
            "decision": "approved" if row.approved else "denied",
            "decided_by": {"id": by.pk, "name": by.shown_name} if by else None}
    if not decided:
        return messages
    for m in messages:
        if any(isinstance(b, dict) and b.get("id") in decided for b in m["content"] or []):
            m["content"] = [{**b, **decided[b["id"]]}
                            if isinstance(b, dict) and b.get("id") in decided else b
                            for b in m["content"]]
    return messages


def _with_results(messages: list[dict[str, Any]], run: Run | None) -> list[dict[str, Any]]:
    """While a batch of the active ``run`` is still running its results are not in a message
    yet: each of its ``tool_use`` blocks whose call has finished carries ``result`` (the
    ``tool_result`` block) and ``duration_ms``, from the run's ``tool_result`` events. Read
    for the calls without a result only (one batch), so the frame stays bounded."""
    if run is None:
        return messages
    answered = {b.get("tool_use_id") for m in messages for b in m["content"] or []
                if isinstance(b, dict) and b.get("type") == "tool_result"}
    open_uses = {b["id"]: b for m in messages if m["run_id"] == run.pk
                 for b in m["content"] or [] if isinstance(b, dict)
                 and b.get("type") == "tool_use" and b.get("id") not in answered}
    if not open_uses:
        return messages
    finished = {payload["call_id"]: payload for payload in (
        ConversationEvent.objects.filter(run_id=run.pk, kind="tool_result",
                                         payload__call_id__in=list(open_uses))
        .values_list("payload", flat=True))}
    for m in messages:
        if any(isinstance(b, dict) and b.get("id") in finished for b in m["content"] or []):
            m["content"] = [{**b, "result": finished[b["id"]]["result"],
                             "duration_ms": finished[b["id"]]["duration_ms"]}
                            if isinstance(b, dict) and b.get("id") in finished else b
                            for b in m["content"]]
    return messages


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


def _in_order(messages: list[Message]) -> list[Message]:
    """History order first (positions), then what has not joined it yet (streaming, pending)."""
    placed = [m for m in messages if m.position is not None]
    rest = [m for m in messages if m.position is None]
    return placed + rest


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


def _wiki_changes(conversation_id: int) -> list[dict[str, object]]:
    """The latest ``wiki_changed`` events, oldest first (the room shows them with the tool
    calls that made them)."""
    rows = (ConversationEvent.objects.filter(conversation_id=conversation_id,
                                             kind="wiki_changed")
            .order_by("-seq").values_list("payload", flat=True)[:WIKI_CHANGES_SHOWN])
    return list(reversed(rows))
