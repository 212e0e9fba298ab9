"""What the REST API reads and writes (DESIGN 3.5): request bodies, objects, errors, exports.

Output schemas read model instances (``from_attributes``); the transcript export is streamed
without passing through them, and its schema here documents it (a test holds the two together).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from apps.api.transcript import fork_origin
from apps.common.input_schema import InputSchema
from apps.engine.messages import ContentBlock
from apps.rooms.models import Conversation
from apps.rooms.names import CONVERSATION_TITLE_MAX, ROOM_NAME_MAX
from apps.rooms.services.configure import conversation_settings

__all__ = [
    "READ_ERRORS",
    "WRITE_ERRORS",
    "ConversationCreateIn",
    "ConversationOut",
    "ConversationRenameIn",
    "ErrorOut",
    "ForkOrigin",
    "ImageOut",
    "PersonRef",
    "RoomCreateIn",
    "RoomMessage",
    "RoomOut",
    "RoomRenameIn",
    "TranscriptOut",
]


class ErrorOut(Schema):
    """Every refusal: ``code`` from a closed list (not_authenticated, not_found, forbidden,
    conflict, invalid, rate_limited, too_large, unsupported_type, unavailable; ``internal`` for
    a 500, a server bug) and a human ``message``."""

    code: str
    message: str


READ_ERRORS = frozenset({400, 401, 404})
"""Statuses a read can refuse with (as :class:`ErrorOut`)."""

WRITE_ERRORS = frozenset({400, 401, 403, 404, 409})
"""Statuses a write can refuse with (as :class:`ErrorOut`)."""


class ImageOut(Schema):
    """An uploaded image: attach it with ``send.attachments: [{"kind": "image", "id"}]``;
    ``url`` serves it to the team's members; ``width`` and ``height`` in pixels."""

    id: str
    url: str
    media_type: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
    width: int
    height: int


class PersonRef(Schema):
    """A person as others see them; ``id`` is null once their account is gone."""

    id: int | None
    name: str


class TeamRef(Schema):
    id: int
    name: str


class RoomRef(Schema):
    id: int
    name: str


class RoomOut(Schema):
    """A room of one of your teams."""

    id: int
    team: TeamRef
    name: str
    archived: bool
    created_at: datetime
    updated_at: datetime


_ONE_LINE = ("On one line: runs of spaces, tabs and line breaks become one space, control "
             "characters are dropped, the ends trimmed; then 1-{most} characters with at least "
             "one visible one (a letter, digit, punctuation mark or symbol), else `invalid`.")
_ROOM_NAME = _ONE_LINE.format(most=ROOM_NAME_MAX)
_TITLE = _ONE_LINE.format(most=CONVERSATION_TITLE_MAX)


class RoomCreateIn(InputSchema):
    team_id: int
    name: str = Field(min_length=1, description=_ROOM_NAME)


class RoomRenameIn(InputSchema):
    name: str = Field(min_length=1, description=_ROOM_NAME)


AgentModeName = Literal["always", "mention"]


class ForkOrigin(Schema):
    """Where a fork was made: the other conversation and the message its copy ends with."""

    conversation_id: int
    message_id: int
class ConversationSettings(Schema):
    """The model (a ModelConfig id; null: none configured) and the reasoning controls set
    (ReasoningParams field -> value) the conversation's next run uses (docs/protocol.md,
    ``configure``)."""

    model: int | None
    reasoning: dict[str, Any]


class ConversationOut(Schema):
    """A conversation. ``last_seq``: the last event number, for a socket's ``after_seq``;
    ``agent_mode``: the agent answers every message (``always``) or when mentioned or asked
    (``mention``); ``forked_from``: for a fork, where it was made (null otherwise)."""

    id: int
    room: RoomRef
    team_id: int
    title: str
    agent_mode: AgentModeName
    archived: bool
    created_by: PersonRef | None
    settings: ConversationSettings
    last_seq: int
    forked_from: ForkOrigin | None
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_team_id(obj: Conversation) -> int:
        return obj.room.team_id

    @staticmethod
    def resolve_forked_from(obj: Conversation) -> dict[str, int] | None:
        return fork_origin(obj)

    @staticmethod
    def resolve_created_by(obj: Conversation) -> dict[str, Any] | None:
        user = obj.created_by
        return {"id": user.pk, "name": user.shown_name} if user else None

    @staticmethod
    def resolve_settings(obj: Conversation) -> dict[str, Any]:
        return conversation_settings(obj)


class ConversationCreateIn(InputSchema):
    title: str = Field("New conversation", min_length=1, description=_TITLE)
    agent_mode: AgentModeName = "always"


class ConversationRenameIn(InputSchema):
    title: str = Field(min_length=1, description=_TITLE)


# -- transcript export ---------------------------------------------------------------------------


class ExportConversation(Schema):
    """``created_by``: who created the conversation (null: unknown); ``started_by``: the
    creator, else the author of its first message from a person; ``forked_from``: for a fork,
    where it was made (null otherwise, or once that message is gone)."""

    id: int
    title: str
    agent_mode: AgentModeName
    archived: bool
    room: RoomRef
    team: TeamRef
    created_by: PersonRef | None
    started_by: PersonRef | None
    forked_from: ForkOrigin | None
    last_seq: int
    created_at: datetime
    updated_at: datetime


_SUPERSEDED = ("An earlier version: the run whose messages replaced this one (an edit or a "
               "regenerated answer); left out of the model's history. Null: current (or "
               "replaced by a chat edit: see superseded_by_message).")
_SUPERSEDED_MESSAGE = ("An earlier version replaced by a chat edit, which starts no run (a "
                       "`mention` conversation, the new text not mentioning the agent): the "
                       "message that replaced it; left out of the model's history. Null: "
                       "current, or replaced by a run.")
class SourceOut(Schema):
    """A source an answer cites (its citations or grounding): an http(s) ``url``, its
    ``title`` and ``site`` as plain text (docs/protocol.md)."""

    title: str
    site: str
    url: str


class ExportMessage(Schema):
    """One stored message, verbatim. ``content``: the engine's content blocks, thinking (with
    its signature), tool calls and results included. ``position``: its place in the history the
    model saw (null while pending); ``compacted``: replaced by a summary in that history."""

    id: int
    position: int | None
    role: Literal["system", "user", "assistant", "tool"]
    author: PersonRef | None
    content: list[ContentBlock]
    reasoning_content: str | None
    status: Literal["pending", "streaming", "complete", "cancelled", "error"]
    client_id: str | None
    wakes_agent: bool = Field(description="The person's message asked for the agent (every "
                              "message in an `always` conversation).")
    engine_id: str | None
    run_id: int | None
    provider: str | None
    model: str | None
    usage: dict[str, Any] | None = Field(description="Token counts (the engine's Usage).")
    sources: list[SourceOut] = Field(description="The answer's numbered sources.")
    compacted: bool
    superseded_by_run: int | None = Field(description=_SUPERSEDED)
    superseded_by_message: int | None = Field(description=_SUPERSEDED_MESSAGE)
    created_at: datetime
    updated_at: datetime


class RoomMessage(Schema):
    """A message as the room shows it (the socket's MESSAGE, docs/protocol.md): ``content``
    blocks as stored, a decided ``tool_use`` also carrying ``decision`` and ``decided_by``."""

    id: int
    role: Literal["system", "user", "assistant", "tool"]
    author: PersonRef | None
    content: list[dict[str, Any]]
    reasoning_content: str | None
    status: Literal["pending", "streaming", "complete", "cancelled", "error"]
    client_id: str | None
    wakes_agent: bool = Field(description="A person's message that asked for the agent.")
    engine_id: str | None
    run_id: int | None
    provider: str | None
    model: str | None
    usage: dict[str, Any] | None
    superseded_by_run: int | None = Field(description=_SUPERSEDED)
    superseded_by_message: int | None = Field(description=_SUPERSEDED_MESSAGE)
    sources: list[SourceOut] = Field(description="The answer's numbered sources.")
    created_at: str | None = Field(description="ISO 8601, as in the socket's frames.")


class ForkMadeOut(Schema):
    """A conversation forked at one of the page's messages: the fork (its ``conversation_id``
    and ``title``), the message, and who forked it (null: unknown)."""

    conversation_id: int
    title: str
    message_id: int
    by: PersonRef | None


class MessagesPageOut(Schema):
    """One page of the transcript, oldest first; ``before``: the cursor of the next older page
    (pass it as ``?before=``), null at the start; ``wiki_changes``: the ``wiki_changed`` events
    of the page's runs; ``forks``: the conversations forked at its messages (docs/protocol.md)."""

    messages: list[RoomMessage]
    before: str | None
    wiki_changes: list[dict[str, Any]]
    forks: list[ForkMadeOut]


class ExportDecision(Schema):
    tool_call_id: str
    tool_name: str
    approved: bool
    decided_by: PersonRef | None
    decided_at: datetime


class ExportRun(Schema):
    """A run; ``model`` and ``reasoning`` (the ReasoningParams fields set, null: none) are
    what it ran with."""

    id: int
    status: str
    model: str
    reasoning: dict[str, Any] | None
    started_by: PersonRef | None
    stopped_by: PersonRef | None
    error_kind: str
    error_message: str
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    decisions: list[ExportDecision]


class ExportWikiChange(Schema):
    """A commit the agent made to the team wiki (the log's ``wiki_changed`` event): where it
    is in the log (``seq``), its run, and the event's fields (docs/protocol.md)."""

    seq: int
    run_id: int | None
    at: datetime
    call_id: str
    path: str
    commit: str
    author: str
    summary: str
    created: bool
    merged: bool
    page_url: str
    diff_url: str
    diff_page_url: str


class TranscriptOut(Schema):
    """The full transcript of a conversation (``GET .../export.json``)."""

    format: Literal["confab.transcript"]
    version: Literal[1]
    exported_at: datetime
    conversation: ExportConversation
    messages: list[ExportMessage]
    runs: list[ExportRun]
    wiki_changes: list[ExportWikiChange]

