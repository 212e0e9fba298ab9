"""Channel-layer group names and envelopes (DESIGN 3.3). Names stay ASCII and short, as the
channel layers require."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["RUN_CHANNEL", "conversation_group", "room_group", "run_group", "user_group",
           "wiki_group", "EventEnvelope", "HwmEnvelope"]

RUN_CHANNEL = "agent-runs"
"""The channel run workers consume (``manage.py runworker agent-runs``)."""


def conversation_group(conversation_id: int) -> str:
    """Every socket watching the conversation."""
    return f"conv.{conversation_id}"


def room_group(room_id: int) -> str:
    """Every socket watching one of the room's conversations (the room page's sidebar)."""
    return f"room.{room_id}"


def run_group(run_id: int) -> str:
    """The worker hosting the run (steer, stop, decide, answer reach it here)."""
    return f"run.{run_id}"


def user_group(user_id: int) -> str:
    """Every socket of one person (closed when they leave a team)."""
    return f"user.{user_id}"


def wiki_group(team_id: int) -> str:
    """Every socket reading or editing a page of the team's wiki (members of that team only)."""
    return f"wiki.{team_id}"


class EventEnvelope(TypedDict):
    """A logged event on its way to the sockets: ``type`` "conv.event", ``kind`` the event's
    kind, ``frame`` the socket's ``event`` frame as JSON text, encoded once for every watcher
    (:mod:`apps.realtime.event_frame`)."""

    type: str
    seq: int
    kind: str
    frame: str


class HwmEnvelope(TypedDict):
    """The log's high-water mark on its way to the sockets: ``type`` "conv.hwm", ``seq`` the
    last stored seq (every event up to it can be read from the store)."""

    type: str
    seq: int
