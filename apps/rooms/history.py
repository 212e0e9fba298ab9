"""The transcript in pages, newest first (DESIGN 3.3): what a ``state`` frame carries, and
what a ``history`` frame or ``GET /api/conversations/{id}/messages?before=`` pages back through.

A page holds the newest messages before its cursor, at most ``CONFAB["HISTORY_PAGE_MESSAGES"]``
of them and, past the first, at most ``CONFAB["HISTORY_PAGE_BYTES"]`` of JSON, so a frame's size
depends on the page and never on the conversation's length. Messages are ordered as clients
show them: the history by ``(position, id)``, then what has not joined it yet (a message being
written, people's pending messages) by ``id``. A page never starts with a message of tool
results alone: it reaches back to the message of the calls they answer, past its limits if it
must (one message more). Sizes are measured as the socket sends them (JSON with non-ASCII
escaped). The cursor is opaque to clients: ``p<position>.<id>`` or ``u<id>``, the oldest message
carried; a ``u`` cursor whose message has since joined the history continues from its place
there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils.translation import gettext

from apps.common.errors import ApplicationError, ErrorCode
from apps.rooms.models import Conversation, ConversationEvent, Message, Run, ToolDecision
from apps.rooms.transcript import message_json

__all__ = ["WIKI_CHANGES_SHOWN", "Page", "messages_page"]

WIKI_CHANGES_SHOWN = 200
"""The most ``wiki_changed`` events a page carries (the rest are in the log and the exports)."""

_CURSOR = re.compile(r"p(\d{1,10})\.(\d{1,19})|u(\d{1,19})")


@dataclass(frozen=True, slots=True)
class Page:
    """``messages`` oldest first (clients' MESSAGE objects, with decisions and, for the active
    run's batch, finished results); ``before``: the cursor of the next older page, or None;
    ``wiki_changes``: the ``wiki_changed`` events of the runs of those messages, oldest first
    (the room shows them under the calls that made them); ``forks``: the conversations forked
    at those messages, oldest first, each ``{"conversation_id", "title", "message_id", "by":
    PERSON | null}`` (the room shows them under the message)."""

    messages: list[dict[str, Any]]
    before: str | None
    wiki_changes: list[dict[str, Any]]
    forks: list[dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        return {"messages": self.messages, "before": self.before,
                "wiki_changes": self.wiki_changes, "forks": self.forks}


def messages_page(conversation_id: int, before: str | None = None, *,
                  run: Run | None = None) -> Page:
    """The page of ``conversation_id``'s messages just older than ``before`` (None: the
    newest); ``run``: the active run, whose finished calls carry their results. Raises
    ApplicationError ``invalid`` for a cursor that is not one."""
    limit = settings.CONFAB["HISTORY_PAGE_MESSAGES"]
    fetched = limit + 3  # room for the reach back to a results message's calls
    rows = _newest_first(conversation_id, before, fetched)
    taken: list[tuple[Message, dict[str, Any]]] = []
    budget = settings.CONFAB["HISTORY_PAGE_BYTES"]
    for row in rows:
        shown = message_json(row)
        budget -= len(json.dumps(shown, separators=(",", ":")))
        results_first = bool(taken) and _results_only(taken[-1][1])
        if taken and (budget < 0 or len(taken) >= limit) and not results_first:
            break
        taken.append((row, shown))
    more = len(taken) < len(rows) or (len(rows) == fetched and bool(
        _newest_first(conversation_id, _cursor(taken[-1][0]), 1)))
    messages = [shown for _, shown in reversed(taken)]
    return Page(messages=with_results(with_subagent_waits(with_decisions(messages)), run),
                before=_cursor(taken[-1][0]) if more and taken else None,
                wiki_changes=_wiki_changes(messages), forks=_forks(messages))


def _newest_first(conversation_id: int, before: str | None, count: int) -> list[Message]:
    rows = Message.objects.filter(conversation_id=conversation_id)
    placed = rows.filter(position__isnull=False).order_by("-position", "-id")
    if before is None:
        return _take(rows.filter(position__isnull=True).order_by("-id"), count, placed)
    match = _CURSOR.fullmatch(before)
    if match is None:
        raise ApplicationError(ErrorCode.INVALID, gettext("That is not a history cursor."))
    position, row_id, unplaced_id = match.groups()
    if unplaced_id is not None:
        joined = rows.filter(pk=int(unplaced_id), position__isnull=False).first()
        if joined is None:
            return _take(rows.filter(position__isnull=True, id__lt=int(unplaced_id))
                         .order_by("-id"), count, placed)
        position, row_id = joined.position, joined.pk  # it joined the history meanwhile
    return list(placed.filter(Q(position__lt=int(position))
                              | Q(position=int(position), id__lt=int(row_id)))[:count])


def _take(unplaced: QuerySet[Message], count: int, placed: QuerySet[Message]) -> list[Message]:
    """Up to ``count`` rows: the unplaced ones (newest) first, then the history's."""
    first = list(unplaced[:count])
    return first + list(placed[:count - len(first)]) if len(first) < count else first


def _cursor(row: Message) -> str:
    return f"u{row.pk}" if row.position is None else f"p{row.position}.{row.pk}"


def _wiki_changes(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    runs = {m["run_id"] for m in messages if m["run_id"] is not None}
    if not runs:
        return []
    rows = (ConversationEvent.objects.filter(run_id__in=runs, kind="wiki_changed")
            .order_by("-seq").values_list("payload", flat=True)[:WIKI_CHANGES_SHOWN])
    return list(reversed(rows))


def _forks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not messages:
        return []
    rows = (Conversation.objects.filter(forked_from_id__in=[m["id"] for m in messages])
            .select_related("created_by").order_by("id"))
    return [{"conversation_id": fork.pk, "title": fork.title,
             "message_id": fork.forked_from_id,
             "by": ({"id": fork.created_by_id, "name": fork.created_by.shown_name}
                    if fork.created_by else None)} for fork in rows]


def _results_only(message: dict[str, Any]) -> bool:
    blocks = message["content"] or []
    return bool(blocks) and all(isinstance(b, dict) and b.get("type") == "tool_result"
                                for b in blocks)


def with_decisions(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each decided ``tool_use`` block carrying ``decision`` (``approved``,
    ``denied`` or ``timed_out``) and ``decided_by`` (``{"id", "name"}``; null for a timeout
    or a deleted account), and ``edited_arguments`` when the decider edited them. Copies of
    the blocks: the stored content stays verbatim. Read for the runs of these messages only,
    so the work grows with the page, not the conversation."""
    uses = _blocks(messages, "tool_use")
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
            "decided_by": {"id": by.pk, "name": by.shown_name} if by else None,
            **({"edited_arguments": row.arguments} if row.arguments is not None else {})}
    return _amend(messages, decided)


SUBAGENT_WAITS = ("awaiting_approval", "approval_decided", "awaiting_input", "input_received")


def with_subagent_waits(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each ``Task`` call whose sub-agent waited for the room carries ``subagent_waits``: the
    nested events of those waits (asked, decided or answered) and the results of the calls
    that waited, in order — the sub-agent's transcript is not stored, so this is what shows
    its decided calls again after a reload. Read for the page's Task calls only."""
    tasks = [call_id for call_id, block in _blocks(messages, "tool_use").items()
             if block.get("name") == "Task"]
    runs = {m["run_id"] for m in messages if m["run_id"] is not None}
    if not tasks or not runs:
        return messages
    rows = (ConversationEvent.objects
            .filter(run_id__in=runs, kind="subagent_event", payload__parent_call_id__in=tasks,
                    payload__event__kind__in=(*SUBAGENT_WAITS, "tool_result"))
            .order_by("seq").values_list("payload", flat=True))
    waited: set[str] = set()
    per_task: dict[str, list[dict[str, Any]]] = {}
    for payload in rows:
        event = payload["event"]
        call_id = event.get("call_id") or event.get("question_id")
        if event["kind"] in SUBAGENT_WAITS:
            waited.add(call_id)
        elif call_id not in waited:
            continue  # a call nobody had to answer: not shown as a card
        per_task.setdefault(payload["parent_call_id"], []).append(event)
    return _amend(messages, {task: {"subagent_waits": events}
                             for task, events in per_task.items()})


def with_results(messages: list[dict[str, Any]], run: Run | None) -> list[dict[str, Any]]:
    """While a batch of the active ``run`` is still running its results are not in a message
    yet: each of its ``tool_use`` blocks whose call has finished carries ``result`` (the
    ``tool_result`` block) and ``duration_ms``, from the run's ``tool_result`` events. Read
    for the calls without a result only (one batch)."""
    if run is None:
        return messages
    answered = {b.get("tool_use_id") for m in messages for b in m["content"] or []
                 if isinstance(b, dict) and b.get("type") == "tool_result"}
    open_uses = [call_id for call_id, _ in _blocks(
        [m for m in messages if m["run_id"] == run.pk], "tool_use").items()
        if call_id not in answered]
    if not open_uses:
        return messages
    finished = {payload["call_id"]: {"result": payload["result"],
                                     "duration_ms": payload["duration_ms"]}
                for payload in (ConversationEvent.objects
                                .filter(run_id=run.pk, kind="tool_result",
                                        payload__call_id__in=open_uses)
                                .values_list("payload", flat=True))}
    return _amend(messages, finished)


def _blocks(messages: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """The ``kind`` blocks of ``messages`` that have an id, by id."""
    return {b["id"]: b for m in messages for b in m["content"] or []
            if isinstance(b, dict) and b.get("type") == kind and b.get("id")}


def _amend(messages: list[dict[str, Any]], extra: dict[str, dict[str, Any]]
           ) -> list[dict[str, Any]]:
    """Copy each block whose id is in ``extra`` with those fields added."""
    if not extra:
        return messages
    for m in messages:
        if any(isinstance(b, dict) and b.get("id") in extra for b in m["content"] or []):
            m["content"] = [{**b, **extra[b["id"]]}
                            if isinstance(b, dict) and b.get("id") in extra else b
                            for b in m["content"]]
    return messages
