"""Automatic titles: after a conversation's first exchange the run's host asks the model for a
title (:func:`apps.engine.titles.propose_title`) once the run has ended, so the call is never on
the run's latency path (like the session notes, :mod:`apps.rooms.notes`).

Only a conversation that still has the default title is titled, and the title is stored only if
nobody renamed it meanwhile (one conditional UPDATE), broadcast as ``title_changed`` with
``by: null`` (the agent). A failed or slow call leaves the title as it was; the next run's end
tries again.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from django.db import transaction

from apps.common.errors import ApplicationError
from apps.engine.providers.base import AiProvider
from apps.engine.titles import propose_title
from apps.rooms.models import Conversation, Message
from apps.rooms.names import conversation_title
from apps.rooms.services.events import event_append
from apps.rooms.transcript import history_rows

__all__ = ["DEFAULT_TITLE", "TITLE_TIMEOUT_S", "title_after_end", "title_auto_save"]

logger = logging.getLogger(__name__)

DEFAULT_TITLE: str = Conversation._meta.get_field("title").default
TITLE_TIMEOUT_S = 30.0
"""How long the title call may take (seconds) before it is given up."""


def _first_exchange(conversation_id: int) -> tuple[str, str] | None:
    """The first person's message and the first answer's text, if the conversation still has
    the default title and has both; None otherwise."""
    if not Conversation.objects.filter(pk=conversation_id, title=DEFAULT_TITLE).exists():
        return None
    rows = history_rows(conversation_id)
    asked = rows.filter(role="user").exclude(author_name="").first()
    if asked is None:
        return None
    answered = rows.filter(role="assistant", position__gt=asked.position)
    answer = next((text for m in answered[:5] if (text := _text(m))), "")
    first = _text(asked)
    return (first, answer) if first and answer else None


def _text(row: Message) -> str:
    return "\n".join(b.get("text", "") for b in row.content or []
                     if isinstance(b, dict) and b.get("type") == "text").strip()


def title_auto_save(conversation_id: int, title: str) -> bool:
    """Store ``title``, cleaned by the rules every title follows
    (:func:`apps.rooms.names.conversation_title`), unless the conversation's title is no
    longer the default (a person renamed it meanwhile) or nothing visible is left of it;
    broadcast ``title_changed``. Whether it was stored."""
    try:
        title = conversation_title(title)
    except ApplicationError:  # blank once cleaned: keep the default, a later run tries again
        return False
    with transaction.atomic():
        stored = Conversation.objects.filter(pk=conversation_id, title=DEFAULT_TITLE).update(
            title=title)
        if stored:
            event_append(conversation_id, "title_changed",
                         {"kind": "title_changed", "title": title, "by": None})
    return bool(stored)


async def title_after_end(provider: AiProvider, model: str, conversation_id: int) -> None:
    """Title the conversation after its first exchange (see the module doc); never raises."""
    try:
        exchange = await database_sync_to_async(_first_exchange)(conversation_id)
        if exchange is None:
            return
        async with asyncio.timeout(TITLE_TIMEOUT_S):
            title = await propose_title(provider, model, first=exchange[0], answer=exchange[1])
        if title:
            await database_sync_to_async(title_auto_save)(conversation_id, title)
    except Exception:  # a title is a nicety: the run is over and stays so
        logger.warning("conversation %s: no automatic title", conversation_id, exc_info=True)
