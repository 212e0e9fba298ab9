"""Live group messages skip channels' per-message database hop (issue 20: capacity).

Since channels 4.2, ``AsyncConsumer.dispatch`` awaits ``aclose_old_connections()`` before every
handler: a trip to the process's one database thread (``sync_to_async`` is thread-sensitive)
for every message every socket receives. For a conversation socket that is every streamed
frame, per watcher: Daphne's CPU per frame, and every live frame waited behind whatever that
thread was doing (a join's state, a ``send``). The handlers of the messages below reach the
database only through ``database_sync_to_async``, which closes old connections itself (before
and after), so they run without the hop. Every other message (the client's frames, membership
and credential changes) still goes through channels' ``dispatch``.
"""

from __future__ import annotations

from typing import Any

from channels.consumer import AsyncConsumer, get_handler_name

__all__ = ["LIVE_MESSAGES", "dispatch_live"]

LIVE_MESSAGES = frozenset({"conv.event", "conv.hwm", "presence.join", "presence.here",
                           "presence.leave", "presence.typing"})
"""Group messages of a conversation socket whose handlers use no async ORM call."""


async def dispatch_live(consumer: AsyncConsumer, message: dict[str, Any]) -> bool:
    """Run ``consumer``'s handler for a live message (``LIVE_MESSAGES``) and return True;
    return False, doing nothing, for any other message (the caller dispatches it). Raises
    what the handler raises, ``ValueError`` for a message type that names no handler."""
    if message["type"] not in LIVE_MESSAGES:
        return False
    handler = getattr(consumer, get_handler_name(message), None)
    if handler is None:
        raise ValueError(f"No handler for message type {message['type']}")
    await handler(message)
    return True
