"""Forks and new versions of a conversation's end: fork at a message, edit your own last
message, regenerate the last answer (:mod:`apps.rooms.services.forks`,
:mod:`apps.rooms.services.versions`).

The conversation is looked up through the caller's teams (another team's answers ``404`` like
a missing one); a message is looked up in that conversation only.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status

from apps.api.schemas import WRITE_ERRORS, ConversationOut, ErrorOut, RoomMessage
from apps.common.input_schema import InputSchema
from apps.rooms.models import Conversation
from apps.rooms.selectors import conversation_for
from apps.rooms.services.forks import conversation_fork
from apps.rooms.services.versions import answer_regenerate, message_edit
from apps.rooms.transcript import message_json

__all__ = ["router"]

router = Router(tags=["conversations"])

_SENDING_ERRORS = WRITE_ERRORS | {413, 429}


class ForkIn(InputSchema):
    message_id: int = Field(description="The message the fork's copy of the history ends with.")


class EditIn(InputSchema):
    text: str = Field(min_length=1, description="The message's new text.")


class RegenerateOut(Schema):
    run_id: int = Field(description="The run that answers again (its events follow on the "
                        "conversation's socket).")


@router.post("/conversations/{conversation_id}/fork",
             response={201: ConversationOut, WRITE_ERRORS: ErrorOut})
def fork_conversation(request: HttpRequest, conversation_id: int,
                      payload: ForkIn) -> Status[Conversation]:
    """A new conversation in the same room whose history is this one's up to and including
    ``message_id`` (not its workspace files or session notes). ``409`` for a message still
    streaming or pending, stopped, an earlier version or compacted."""
    conversation, membership = conversation_for(request.auth, conversation_id)
    return Status(201, conversation_fork(conversation=conversation, membership=membership,
                                         message_id=payload.message_id))


@router.post("/conversations/{conversation_id}/messages/{message_id}/edit",
             response={201: RoomMessage, _SENDING_ERRORS: ErrorOut})
def edit_message(request: HttpRequest, conversation_id: int, message_id: int,
                 payload: EditIn) -> Status[dict[str, Any]]:
    """Replace your own last message and run the agent again; the old message and its answer
    stay as the earlier version. ``403`` for someone else's message, ``409`` for one that is
    not the last a person wrote or while a run is active."""
    conversation, membership = conversation_for(request.auth, conversation_id)
    message = message_edit(conversation=conversation, membership=membership,
                           message_id=message_id, text=payload.text)
    return Status(201, message_json(message))


@router.post("/conversations/{conversation_id}/regenerate",
             response={201: RegenerateOut, _SENDING_ERRORS: ErrorOut})
def regenerate_answer(request: HttpRequest, conversation_id: int) -> Status[dict[str, int]]:
    """Answer the last message a person wrote again; the answer it had stays as the earlier
    version. ``409`` while a run is active or when there is no answer yet."""
    conversation, membership = conversation_for(request.auth, conversation_id)
    run = answer_regenerate(conversation=conversation, membership=membership)
    return Status(201, {"run_id": run.pk})
