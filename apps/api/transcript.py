"""Transcript export, streamed in constant memory (DESIGN 3.5).

Rows come from the database in chunks of :data:`CHUNK_ROWS` (``QuerySet.aiterator``: a
server-side cursor where the database has them), each is rendered on its own and written out in
pieces of about :data:`FLUSH_CHARS`, so memory does not grow with the length of the conversation.

The body is an *asynchronous* iterator on purpose: the server is ASGI (Daphne), and Django
serves a synchronous iterator there only after reading all of it into a list.

The JSON form (``confab.transcript`` version 1, documented by
:class:`apps.api.schemas.TranscriptOut`) keeps everything: messages with their authors, roles,
content blocks verbatim (thinking with signatures, tool calls and results), usage, status and
timestamps, then the runs with who started and stopped them and the tool decisions taken, then
the agent's commits to the team wiki (the ``wiki_changed`` events of the log).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Callable
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse
from django.utils import timezone

from apps.accounts.models import User
from apps.common.downloads import attachment_disposition
from apps.rooms.drafts import being_written
from apps.rooms.models import Conversation, ConversationEvent, Message, Run
from apps.rooms.selectors import transcript_messages, transcript_runs, transcript_wiki_changes
from apps.rooms.transcript import message_json

__all__ = [
    "CHUNK_ROWS",
    "conversation_record",
    "fork_origin",
    "message_records",
    "run_records",
    "streamed",
    "transcript_json",
    "wiki_change_records",
]

CHUNK_ROWS = 500
"""Rows fetched per database round trip."""

FLUSH_CHARS = 64 * 1024
"""About how much text is handed to the server at a time."""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _person(user: User | None) -> dict[str, Any] | None:
    return {"id": user.pk, "name": user.shown_name} if user else None


def _starter(conversation: Conversation) -> User | None:
    """Who started the conversation: its creator, else the author of its first message from
    a person (a conversation made by a script or a deleted account has no creator)."""
    if conversation.created_by is not None:
        return conversation.created_by
    first = (Message.objects.filter(conversation=conversation, author__isnull=False)
             .select_related("author").order_by("id").first())
    return first.author if first else None


def fork_origin(conversation: Conversation) -> dict[str, int] | None:
    """For a fork, ``{"conversation_id", "message_id"}`` of where it was made."""
    point = conversation.forked_from
    return ({"conversation_id": point.conversation_id, "message_id": point.pk}
            if point else None)


def conversation_record(conversation: Conversation) -> dict[str, Any]:
    """The conversation's header; reads ``room``, ``room.team``, ``created_by`` and (without a
    creator) the first person's message, so call it before streaming starts (lazy loads are
    not allowed in the async body). ``started_by``: the creator, else that first author."""
    room = conversation.room
    return {
        "id": conversation.pk,
        "title": conversation.title,
        "agent_mode": conversation.agent_mode,
        "archived": conversation.archived,
        "room": {"id": room.pk, "name": room.name},
        "team": {"id": room.team.pk, "name": room.team.name},
        "created_by": _person(conversation.created_by),
        "started_by": _person(_starter(conversation)),
        "forked_from": fork_origin(conversation),
        "last_seq": conversation.last_seq,
        "created_at": _iso(conversation.created_at),
        "updated_at": _iso(conversation.updated_at),
    }


def message_record(row: Message) -> dict[str, Any]:
    """One message, as the sockets show it plus its history position and compaction flag."""
    return {**message_json(row), "position": row.position, "compacted": row.compacted,
            "updated_at": _iso(row.updated_at)}


def run_record(run: Run) -> dict[str, Any]:
    """One run with its tool decisions (``decisions`` prefetched)."""
    return {
        "id": run.pk,
        "status": run.status,
        "model": run.model,
        "reasoning": run.reasoning,
        "started_by": _person(run.started_by),
        "stopped_by": _person(run.stopped_by),
        "error_kind": run.error_kind,
        "error_message": run.error_message,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "ended_at": _iso(run.ended_at),
        "decisions": [
            {"tool_call_id": d.tool_call_id, "tool_name": d.tool_name, "approved": d.approved,
             "decided_by": _person(d.decided_by), "decided_at": _iso(d.created_at)}
            for d in run.decisions.all()
        ],
    }


def wiki_change_record(row: ConversationEvent) -> dict[str, Any]:
    """One commit the agent made to the wiki, as the room was told of it (``wiki_changed``),
    with its place in the log and its run."""
    payload = {k: v for k, v in row.payload.items() if k != "kind"}
    return {"seq": row.seq, "run_id": row.run_id, "at": _iso(row.created_at), **payload}


async def _records(rows: AsyncIterable[Any],
                   record: Callable[[Any], dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    async for row in rows:
        yield record(row)


async def message_records(conversation: Conversation) -> AsyncIterator[dict[str, Any]]:
    """The transcript's messages in order, fetched :data:`CHUNK_ROWS` at a time; a message
    still being written reads the log after its checkpoint, in a thread."""
    async for row in transcript_messages(conversation).aiterator(chunk_size=CHUNK_ROWS):
        if being_written(row):
            yield await sync_to_async(message_record)(row)
        else:
            yield message_record(row)


def run_records(conversation: Conversation) -> AsyncIterator[dict[str, Any]]:
    """The conversation's runs, oldest first, fetched :data:`CHUNK_ROWS` at a time."""
    rows = transcript_runs(conversation).aiterator(chunk_size=CHUNK_ROWS)
    return _records(rows, run_record)


def wiki_change_records(conversation: Conversation) -> AsyncIterator[dict[str, Any]]:
    """The conversation's wiki changes in log order, fetched :data:`CHUNK_ROWS` at a time."""
    rows = transcript_wiki_changes(conversation).aiterator(chunk_size=CHUNK_ROWS)
    return _records(rows, wiki_change_record)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def _json_array(records: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
    """The members of a JSON array, one per line."""
    separator = "\n"
    async for record in records:
        yield separator + _dumps(record)
        separator = ",\n"


async def transcript_json(conversation: Conversation,
                          header: dict[str, Any]) -> AsyncIterator[str]:
    """The ``confab.transcript`` document, piece by piece; ``header`` is
    :func:`conversation_record` of ``conversation``."""
    head = {"format": "confab.transcript", "version": 1,
            "exported_at": _iso(timezone.now()), "conversation": header}
    yield _dumps(head)[:-1] + ',\n"messages":['
    async for part in _json_array(message_records(conversation)):
        yield part
    yield '],\n"runs":['
    async for part in _json_array(run_records(conversation)):
        yield part
    yield '],\n"wiki_changes":['
    async for part in _json_array(wiki_change_records(conversation)):
        yield part
    yield "]}\n"


async def _flushed(parts: AsyncIterator[str]) -> AsyncIterator[bytes]:
    """``parts`` regrouped into UTF-8 pieces of about :data:`FLUSH_CHARS`."""
    pending: list[str] = []
    size = 0
    async for part in parts:
        pending.append(part)
        size += len(part)
        if size >= FLUSH_CHARS:
            yield "".join(pending).encode()
            pending.clear()
            size = 0
    if pending:
        yield "".join(pending).encode()


def streamed(parts: AsyncIterator[str], *, content_type: str, filename: str,
             fallback: str) -> StreamingHttpResponse:
    """A download of ``filename`` (``fallback``, ASCII, for clients without RFC 6266's
    ``filename*``) whose body is ``parts``, sent as they are produced."""
    response = StreamingHttpResponse(_flushed(parts), content_type=content_type)
    response["Content-Disposition"] = attachment_disposition(filename, fallback=fallback)
    response["Cache-Control"] = "private, no-store"
    return response
