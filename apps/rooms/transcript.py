"""Between the database rows and the engine's messages."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.common.compiled import CompiledQuery
from apps.engine.messages import Author
from apps.engine.messages import Message as EngineMessage
from apps.engine.sources import sources
from apps.rooms.drafts import content_so_far
from apps.rooms.images import shown_content, with_image_data
from apps.rooms.models import CURRENT_VERSION, Message, MessageStatus
from apps.rooms.plain_text import plain_text

__all__ = ["engine_message", "history_of", "history_rows", "message_fields", "message_json"]

_ENGINE_STATUS = {MessageStatus.CANCELLED: "cancelled", MessageStatus.ERROR: "error"}


def engine_message(row: Message) -> EngineMessage:
    """The engine's form of a stored message (a person's message keeps its author)."""
    return _engine_message(*(getattr(row, name) for name in _ENGINE_FIELDS))


_ENGINE_FIELDS = ("role", "content", "author_id", "author_name", "reasoning_content",
                  "provider", "model", "status")
"""The columns :func:`_engine_message` takes, in its order."""


def _engine_message(role: str, content: list[Any], author_id: int | None, author_name: str,
                    reasoning_content: str | None, provider: str, model: str,
                    status: str) -> EngineMessage:
    author = None
    if role == "user" and author_name:
        author = Author(id=str(author_id or author_name), name=author_name)
    return EngineMessage(
        role=role,  # type: ignore[arg-type]
        content=content,
        author=author,
        reasoning_content=reasoning_content,
        provider=provider or None,  # type: ignore[arg-type]
        model=model or None,
        status=_ENGINE_STATUS.get(status, "complete"),  # type: ignore[arg-type]
    )


def history_rows(conversation_id: int) -> QuerySet[Message]:
    """The rows of the history the model sees, in order: positioned, neither compacted nor
    superseded by a newer version."""
    return (Message.objects.filter(CURRENT_VERSION, conversation_id=conversation_id,
                                   position__isnull=False, compacted=False)
            .order_by("position"))


def history_of(conversation_id: int) -> list[EngineMessage]:
    """The history the model sees (:func:`history_rows`) in the engine's form, with its
    images' bytes. Read as the columns the engine's form takes, not as Message instances:
    building those (some twenty fields each, the search text among them) was two fifths of
    reading a long history, which every run's setup does (60 messages: 3.1 -> 1.8 ms of CPU);
    and compiled once (:data:`_history`)."""
    return with_image_data(conversation_id,
                           [_engine_message(*row) for row in _history(conversation_id)])


_history = CompiledQuery(lambda conversation_id: history_rows(conversation_id)
                         .values_list(*_ENGINE_FIELDS))
""":func:`history_rows` as :func:`_engine_message`'s columns, compiled once: building and
compiling the query was 0.5 ms of CPU when idle, at every run's setup (issue 20)."""


def message_fields(message: EngineMessage) -> dict[str, Any]:
    """Column values for storing an engine message."""
    status = {"cancelled": MessageStatus.CANCELLED, "error": MessageStatus.ERROR}.get(
        message.status, MessageStatus.COMPLETE)
    content = [block.model_dump(mode="json", exclude_none=True) for block in message.content]
    return {
        "role": message.role,
        "content": content,
        "search_text": plain_text(content),
        "reasoning_content": message.reasoning_content,
        "provider": message.provider or "",
        "model": message.model or "",
        "status": status,
    }


def message_json(row: Message) -> dict[str, Any]:
    """A stored message as clients see it (state frames, events, exports); ``sources``: the
    numbered sources its citations and grounding name (:func:`apps.engine.sources.sources`)."""
    return {
        "id": row.pk,
        "role": row.role,
        "author": ({"id": row.author_id, "name": row.author_name}
                   if row.author_name else None),
        "content": shown_content(row.conversation_id, content_so_far(row)),
        "reasoning_content": row.reasoning_content,
        "status": row.status,
        "client_id": row.client_id,
        "wakes_agent": row.wakes_agent,
        "engine_id": row.engine_id or None,
        "run_id": row.run_id,
        "provider": row.provider or None,
        "model": row.model or None,
        "usage": row.usage,
        "superseded_by_run": row.superseded_by_id,
        "superseded_by_message": row.superseded_by_message_id,
        "sources": sources(row.content) if row.role == "assistant" else [],
        "created_at": row.created_at.isoformat() if row.created_at else None,
    }
