"""The ``event`` frame as text, encoded once per logged event (issue 20: capacity).

Every watcher of a conversation gets the same frame for a logged event. Encoding it per watcher
made JSON (and channels-redis's msgpack of the nested payload, once per channel) a per-socket
cost in Daphne and the worker. The writer encodes the frame once, the group message carries the
text, and each socket sends it as it is, after its own seq checks. Replay from the store uses the
same function, so a socket sends the same text for an event whether it came live or from the
store.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["event_frame", "event_frame_text"]


def event_frame(seq: int, event: dict[str, Any]) -> str:
    """``{"type": "event", "seq": seq, "event": event}`` (docs/protocol.md, "event") as JSON
    text, encoded as ``AsyncJsonWebsocketConsumer.send_json`` encodes (``json.dumps``).
    ``event`` is the stored payload (JSON-ready). Raises ``TypeError`` for a value JSON cannot
    hold."""
    return json.dumps({"type": "event", "seq": seq, "event": event})


def event_frame_text(seq: int, event_json: str) -> str:
    """:func:`event_frame` of an event already encoded as ``event_json`` (``json.dumps`` of
    the payload): the same text, without encoding the payload again."""
    return f'{{"type": "event", "seq": {seq}, "event": {event_json}}}'
