"""The WebSocket wire protocol: every client frame is one of a closed, tagged set, validated once.

Client -> server (``docs/protocol.md`` has the full contract):

- ``{"type": "send", "client_id", "text"}``: a message (starts a run, or waits for the next
  step of the running one); ``client_id`` makes a resend after a reconnect idempotent;
- ``{"type": "stop"}``: stop the active run;
- ``{"type": "decide", "tool_call_id", "decision": "approve" | "deny"}``;
- ``{"type": "answer", "question_id", "text"}``: answer an AskUser question;
- ``{"type": "compact"}``: compact the conversation now (when no run is active);
- ``{"type": "set_agent_mode", "agent_mode": "always" | "mention"}``: when the agent answers;
- ``{"type": "ask_agent"}``: start the agent's turn without a message (when no run is active);
- ``{"type": "typing"}``.

Server -> client frames are built by :mod:`apps.realtime.server_frames`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from apps.realtime.storable import storable_text

__all__ = [
    "CLIENT_FRAME",
    "AnswerFrame",
    "ClientFrame",
    "AskAgentFrame",
    "CompactFrame",
    "DecideFrame",
    "SendFrame",
    "SetAgentModeFrame",
    "StopFrame",
    "TypingFrame",
    "ValidationError",
    "parse_client_frame",
]

MAX_TEXT = 10_000_000
"""A frame's text is never longer (characters): far past any message the setting allows, so the
service refuses a long message in plain words (``CONFAB_MESSAGE_MAX_CHARS``) with the frame's
``client_id``, and this only bounds what pydantic copies."""


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    _storable = field_validator("*")(storable_text)  # every string reaches PostgreSQL


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("text is blank")
    return text


class SendFrame(_Frame):
    type: Literal["send"]
    client_id: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.:-]+$")
    text: str = Field(min_length=1, max_length=MAX_TEXT)

    _text = field_validator("text")(_not_blank)


class StopFrame(_Frame):
    type: Literal["stop"]


class DecideFrame(_Frame):
    type: Literal["decide"]
    tool_call_id: str = Field(min_length=1, max_length=100)
    decision: Literal["approve", "deny"]


class AnswerFrame(_Frame):
    type: Literal["answer"]
    question_id: str = Field(min_length=1, max_length=100)
    text: str = Field(min_length=1, max_length=MAX_TEXT)

    _text = field_validator("text")(_not_blank)


class CompactFrame(_Frame):
    type: Literal["compact"]


class SetAgentModeFrame(_Frame):
    type: Literal["set_agent_mode"]
    agent_mode: Literal["always", "mention"]


class AskAgentFrame(_Frame):
    type: Literal["ask_agent"]


class TypingFrame(_Frame):
    type: Literal["typing"]


class HistoryFrame(_Frame):
    """The page of messages older than ``before`` (a cursor from ``state`` or ``history``)."""

    type: Literal["history"]
    before: str = Field(min_length=1, max_length=40)


ClientFrame = Annotated[
    SendFrame | StopFrame | DecideFrame | AnswerFrame | CompactFrame | SetAgentModeFrame
    | AskAgentFrame | TypingFrame | HistoryFrame,
    Field(discriminator="type"),
]
CLIENT_FRAME: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)
WRITE_FRAMES = (SendFrame, StopFrame, DecideFrame, AnswerFrame, CompactFrame, SetAgentModeFrame,
                AskAgentFrame)


def parse_client_frame(data: object) -> ClientFrame:
    """The frame ``data`` (parsed JSON) stands for; raises ValidationError (pydantic)."""
    return CLIENT_FRAME.validate_python(data)


def describe(error: Exception) -> str:
    """A short, safe description of why a frame was refused."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "frame"
        return f"{where}: {first.get('msg', 'invalid')}"
    return str(error)
