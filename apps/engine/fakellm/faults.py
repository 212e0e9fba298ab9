"""Transport faults fakellm can script: a 200 stream that goes silent, is cut, or ends early.

An error step ``{"error": {"fault": "silent" | "reset" | "truncate"}}`` streams the turn's
steps before it (as an in-stream error would), then, instead of the provider's error event:

- ``silent``: sends nothing more and keeps the connection open, until the client gives up
  (its read timeout) and disconnects;
- ``reset``: aborts the connection mid-body: the HTTP/1.1 chunked body is never terminated
  (RFC 9112 §7.1), which a client reads as a connection closed before the message was complete;
- ``truncate``: ends the body cleanly on an event boundary, without the protocol's terminal
  event (Anthropic ``message_stop``, OpenAI ``finish_reason`` and ``[DONE]``, Gemini's
  ``finishReason`` chunk). (A cut inside an event would be read as a malformed event instead,
  since confab's SSE decoder delivers a final unterminated event: see its ``close``.)

As with the other error steps, the retry (the next request of the turn) plays the steps after it.
"""

from __future__ import annotations

import asyncio

__all__ = ["FAULTS", "ConnectionAborted", "play_fault"]

FAULTS = frozenset({"silent", "reset", "truncate"})
"""The values an error step's ``fault`` may take."""


class ConnectionAborted(Exception):
    """Raised inside the response body to make the ASGI server drop the connection mid-body."""


async def play_fault(fault: str) -> None:
    """Called after the steps are sent, for ``fault`` (one of :data:`FAULTS`, checked by the
    caller): returns at once for ``truncate`` (the body ends); raises
    :class:`ConnectionAborted` for ``reset``; waits until cancelled for ``silent``."""
    if fault == "reset":
        raise ConnectionAborted("fakellm scripted connection reset")
    elif fault == "silent":
        await asyncio.Event().wait()  # the client's disconnect cancels this
