"""Conversations: get, rename, archive, delete, and the transcript export as JSON or Markdown.

Every conversation is looked up through the caller's teams: another team's conversation is
``404`` exactly like a missing one. Writes need a role that can write (viewers get ``403``);
deleting also needs to be its creator or a team owner/admin.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router, Status

from apps.api.markdown import transcript_markdown
from apps.api.schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    ConversationOut,
    ConversationRenameIn,
    ErrorOut,
    MessagesPageOut,
    TranscriptOut,
)
from apps.api.transcript import conversation_record, streamed, transcript_json
from apps.common.downloads import title_filename
from apps.common.storable import StorableText
from apps.rooms.history import messages_page
from apps.rooms.models import Conversation
from apps.rooms.selectors import conversation_for
from apps.rooms.services.rooms import (
    conversation_archive,
    conversation_delete,
    conversation_rename,
)
from apps.rooms.services.runs import active_run

router = Router(tags=["conversations"])

_MARKDOWN_RESPONSE = {
    "responses": {
        200: {"description": "The transcript as Markdown.",
              "content": {"text/markdown": {"schema": {"type": "string"}}}},
    },
}


def _conversation(request: HttpRequest, conversation_id: int) -> Conversation:
    """The conversation, through the caller's teams."""
    conversation, _membership = conversation_for(request.auth, conversation_id)
    return conversation


def _download_names(conversation: Conversation, extension: str) -> dict[str, str]:
    """The export's file name from the conversation's title (Chinese titles too), and the
    ASCII ``conversation-<id>.<ext>`` for clients that cannot take it."""
    fallback = f"conversation-{conversation.pk}"
    return {"filename": title_filename(conversation.title, extension, fallback=fallback),
            "fallback": f"{fallback}.{extension}"}


@router.get("/conversations/{conversation_id}",
            response={200: ConversationOut, READ_ERRORS: ErrorOut})
def get_conversation(request: HttpRequest, conversation_id: int) -> Conversation:
    """One conversation; ``last_seq`` is where a socket's ``after_seq`` can start from."""
    return _conversation(request, conversation_id)


@router.get("/conversations/{conversation_id}/messages",
            response={200: MessagesPageOut, READ_ERRORS: ErrorOut})
def list_messages(request: HttpRequest, conversation_id: int,
                  before: StorableText | None = None) -> dict[str, Any]:
    """The newest page of the transcript, or with ``before`` (a page's cursor) the page just
    older than it: as the room's ``state`` and ``history`` frames carry them. ``400 invalid``
    for a cursor that is not one."""
    conversation = _conversation(request, conversation_id)
    return messages_page(conversation.pk, before, run=active_run(conversation)).as_json()


@router.patch("/conversations/{conversation_id}",
              response={200: ConversationOut, WRITE_ERRORS: ErrorOut})
def rename_conversation(request: HttpRequest, conversation_id: int,
                        payload: ConversationRenameIn) -> Conversation:
    """Give a conversation a new title."""
    return conversation_rename(conversation=_conversation(request, conversation_id),
                               title=payload.title, by=request.auth)


@router.post("/conversations/{conversation_id}/archive",
             response={200: ConversationOut, WRITE_ERRORS: ErrorOut})
def archive_conversation(request: HttpRequest, conversation_id: int) -> Conversation:
    """Archive a conversation: it leaves the default list; the transcript stays."""
    return conversation_archive(conversation=_conversation(request, conversation_id),
                                by=request.auth)


@router.delete("/conversations/{conversation_id}",
               response={204: None, WRITE_ERRORS: ErrorOut})
def delete_conversation(request: HttpRequest, conversation_id: int) -> Status[None]:
    """Delete a conversation, its transcript and its workspace (its creator or a team
    owner/admin; ``409`` while a run is active)."""
    conversation_delete(conversation=_conversation(request, conversation_id), by=request.auth)
    return Status(204, None)


@router.get("/conversations/{conversation_id}/export.json",
            response={200: TranscriptOut, READ_ERRORS: ErrorOut})
def export_json(request: HttpRequest, conversation_id: int) -> StreamingHttpResponse:
    """The full transcript as JSON (format ``confab.transcript``, version 1), streamed."""
    conversation = _conversation(request, conversation_id)
    return streamed(transcript_json(conversation, conversation_record(conversation)),
                    content_type="application/json", **_download_names(conversation, "json"))


@router.get("/conversations/{conversation_id}/export.md",
            response={200: None, READ_ERRORS: ErrorOut}, openapi_extra=_MARKDOWN_RESPONSE)
def export_markdown(request: HttpRequest, conversation_id: int) -> StreamingHttpResponse:
    """The transcript as readable Markdown, streamed."""
    conversation = _conversation(request, conversation_id)
    return streamed(transcript_markdown(conversation, conversation_record(conversation)),
                    content_type="text/markdown; charset=utf-8",
                    **_download_names(conversation, "md"))
