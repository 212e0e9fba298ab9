"""The WebSocket wire protocol: every client frame is one of a closed, tagged set, validated once.

Client -> server (``docs/protocol.md`` has the full contract):

- ``{"type": "send", "client_id", "text", "attachments"?}``: a message (starts a run, or waits
  for the next step of the running one); ``client_id`` makes a resend after a reconnect
  idempotent; ``attachments``: ``[{"kind": "mcp_resource", "server", "uri"}]`` (a resource
  read when the message is sent) or ``[{"kind": "image", "id"}]`` (an uploaded image; ``text``
  may then be empty); ``prompt``: ``{"server", "name", "arguments"}``, an MCP prompt expanded
  into the message;
- ``{"type": "prompts"}``: list the team's MCP prompts (answered with a ``prompts`` frame);
- ``{"type": "stop"}``: stop the active run;
- ``{"type": "decide", "tool_call_id", "decision": "approve" | "deny", "arguments"?}``
  (``arguments``: the call's, edited before approving);
- ``{"type": "answer", "question_id", "text"}``: answer an AskUser question;
- ``{"type": "elicit", "elicitation_id", "action", "content"?}``: answer an MCP server's
  elicitation;
- ``{"type": "compact"}``: compact the conversation now (when no run is active);
- ``{"type": "set_agent_mode", "agent_mode": "always" | "mention"}``: when the agent answers;
- ``{"type": "ask_agent"}``: start the agent's turn without a message (when no run is active);
- ``{"type": "rename", "title"}``: give the conversation a new title;
- ``{"type": "configure", "model", "reasoning"}``: the model and reasoning controls of the
  next runs;
- ``{"type": "typing"}``;
- ``{"type": "sidebar"}``: show the room's sidebar (answered with a ``sidebar`` frame, then
  its changes).

Server -> client frames are built by :mod:`apps.realtime.server_frames`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from django.utils.translation import gettext
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from apps.common.storable import storable_text
from apps.common.validation_errors import error_sentence

__all__ = [
    "CLIENT_FRAME",
    "CLIENT_FRAME_TYPES",
    "AnswerFrame",
    "ClientFrame",
    "AskAgentFrame",
    "CompactFrame",
    "ConfigureFrame",
    "DecideFrame",
    "ImageAttachment",
    "McpResourceAttachment",
    "PromptRef",
    "PromptsFrame",
    "ElicitFrame",
    "RenameFrame",
    "SendFrame",
    "SetAgentModeFrame",
    "SidebarFrame",
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
        raise ValueError(gettext("text is blank"))
    return text


class McpResourceAttachment(_Frame):
    """A resource of one of the team's MCP servers, read when the message is sent."""

    kind: Literal["mcp_resource"]
    server: str = Field(min_length=1, max_length=100)
    uri: str = Field(min_length=1, max_length=2000)


class ImageAttachment(_Frame):
    """An image uploaded to this conversation (``POST /api/conversations/{id}/images``)."""

    kind: Literal["image"]
    id: str = Field(min_length=1, max_length=64)


Attachment = Annotated[McpResourceAttachment | ImageAttachment, Field(discriminator="kind")]
MAX_ATTACHMENTS = 50
"""Bounds what pydantic copies; the service refuses past its own limits in plain words
(``CONFAB_IMAGES_PER_MESSAGE``)."""


class PromptRef(_Frame):
    """An MCP prompt to expand into the message: ``/<server>:<name>`` with its arguments."""

    server: str = Field(min_length=1, max_length=100)
    name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, str] = Field(default_factory=dict, max_length=50)


class SendFrame(_Frame):
    type: Literal["send"]
    client_id: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.:-]+$")
    text: str = Field(default="", max_length=MAX_TEXT)
    attachments: list[Attachment] = Field(default_factory=list, max_length=MAX_ATTACHMENTS)
    prompt: PromptRef | None = None

    @model_validator(mode="after")
    def _says_something(self) -> SendFrame:
        if not self.attachments:
            _not_blank(self.text)  # an image may go without words, nothing else may
        return self


class PromptsFrame(_Frame):
    """The prompts of the team's MCP servers, for the composer's slash commands."""

    type: Literal["prompts"]


class StopFrame(_Frame):
    type: Literal["stop"]


class DecideFrame(_Frame):
    """A decision; ``arguments`` (an object, only with ``approve``): the call's arguments as
    the member edited them, checked against the tool's schema by the service."""

    type: Literal["decide"]
    tool_call_id: str = Field(min_length=1, max_length=100)
    decision: Literal["approve", "deny"]
    arguments: dict[str, Any] | None = None


class AnswerFrame(_Frame):
    type: Literal["answer"]
    question_id: str = Field(min_length=1, max_length=100)
    text: str = Field(min_length=1, max_length=MAX_TEXT)

    _text = field_validator("text")(_not_blank)


class ElicitFrame(_Frame):
    """An answer to an MCP server's elicitation (``awaiting_elicitation``): ``content`` only
    with ``accept``, checked against the requested schema by the service."""

    type: Literal["elicit"]
    elicitation_id: str = Field(min_length=1, max_length=100)
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class CompactFrame(_Frame):
    type: Literal["compact"]


class SetAgentModeFrame(_Frame):
    type: Literal["set_agent_mode"]
    agent_mode: Literal["always", "mention"]


class AskAgentFrame(_Frame):
    type: Literal["ask_agent"]


class RenameFrame(_Frame):
    type: Literal["rename"]
    title: str = Field(min_length=1, max_length=MAX_TEXT)  # the service says how long it may be
ControlName = Annotated[str, Field(min_length=1, max_length=40)]


class ConfigureFrame(_Frame):
    """The model (the id of one of ``state.models``) and its reasoning controls (ReasoningParams
    field -> value; null: the model's default) for the conversation's next runs. Which
    controls a model takes is the service's check (``invalid``), not the frame's."""

    type: Literal["configure"]
    model: StrictInt = Field(ge=1)
    reasoning: dict[ControlName, StrictBool | StrictInt | str | None] = Field(
        default_factory=dict, max_length=20)


class TypingFrame(_Frame):
    type: Literal["typing"]


class SidebarFrame(_Frame):
    """Subscribe to the room's sidebar (its conversations, runs and presence)."""

    type: Literal["sidebar"]


class HistoryFrame(_Frame):
    """The page of messages older than ``before`` (a cursor from ``state`` or ``history``)."""

    type: Literal["history"]
    before: str = Field(min_length=1, max_length=40)


ClientFrame = Annotated[
    SendFrame | StopFrame | DecideFrame | AnswerFrame | ElicitFrame | CompactFrame
    | SetAgentModeFrame | AskAgentFrame | TypingFrame | HistoryFrame | PromptsFrame
    | RenameFrame | ConfigureFrame | SidebarFrame,
    Field(discriminator="type"),
]
CLIENT_FRAME: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)
CLIENT_FRAME_TYPES: frozenset[str] = frozenset(
    get_args(frame.model_fields["type"].annotation)[0]
    for frame in get_args(get_args(ClientFrame)[0]))
"""Every client frame's ``type`` (the Literal of each frame of the union)."""
WRITE_FRAMES = (SendFrame, StopFrame, DecideFrame, AnswerFrame, ElicitFrame, CompactFrame,
                SetAgentModeFrame, AskAgentFrame, PromptsFrame, RenameFrame, ConfigureFrame)


def parse_client_frame(data: object) -> ClientFrame:
    """The frame ``data`` (parsed JSON) stands for; raises ValidationError (pydantic)."""
    return CLIENT_FRAME.validate_python(data)


def describe(error: Exception) -> str:
    """A short, safe description of why a frame was refused, ``where: what`` with ``what`` in
    the active language (:func:`~apps.common.validation_errors.error_sentence`)."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "frame"
        return f"{where}: {error_sentence(first)}"
    return str(error)
