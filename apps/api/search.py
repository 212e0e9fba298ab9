"""Search: ``GET /api/search?q=`` across the conversations of your teams (titles and what was
said), as :func:`apps.rooms.search.search` finds it; paged like the lists (``limit``
1 to 200, ``offset``), answering ``{"items": [...], "count"}``."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from apps.api.pagination import PageQuery
from apps.api.schemas import READ_ERRORS, ErrorOut, PersonRef, RoomRef, TeamRef
from apps.rooms.search import QUERY_MAX_CHARS, SearchHit, search

router = Router(tags=["search"])


class SearchQuery(PageQuery):
    q: str = Field(min_length=1, description=(
        f"Text to find (a literal substring, case-insensitive): 1-{QUERY_MAX_CHARS} characters "
        "once its ends are stripped (the service counts: a longer one is `invalid`)."))
    team_id: int | None = Field(None, description="Only this team's conversations.")


class HitConversation(Schema):
    id: int
    title: str
    room: RoomRef
    team: TeamRef


class HitMessage(Schema):
    id: int
    role: Literal["user", "assistant", "tool"]
    author: PersonRef | None
    created_at: datetime


class SearchHitOut(Schema):
    """A conversation's title (``message`` null) or one of its messages that holds the text.
    ``snippet``: the text around the match on one line (``…`` where cut); ``highlight``: the
    match's ``[start, end)`` in it, in characters; ``url``: the room page at the message."""

    conversation: HitConversation
    message: HitMessage | None
    snippet: str
    highlight: tuple[int, int]
    url: str


class SearchPageOut(Schema):
    items: list[SearchHitOut]
    count: int


def _hit_out(hit: SearchHit) -> SearchHitOut:
    conversation, message = hit.conversation, hit.message
    room = conversation.room
    return SearchHitOut(
        conversation=HitConversation(id=conversation.pk, title=conversation.title,
                                     room=RoomRef(id=room.pk, name=room.name),
                                     team=TeamRef(id=room.team_id, name=room.team.name)),
        message=None if message is None else HitMessage(
            id=message.pk, role=message.role, created_at=message.created_at,
            author=(PersonRef(id=message.author_id, name=message.author_name)
                    if message.author_name else None)),
        snippet=hit.snippet, highlight=hit.highlight, url=hit.url)


@router.get("/search", response={200: SearchPageOut, READ_ERRORS: ErrorOut})
def search_conversations(request: HttpRequest,
                         filters: Query[SearchQuery]) -> SearchPageOut:
    """Find text in the titles and messages of your teams' conversations (not archived):
    titles first, then messages, newest first. Chinese and other text without spaces is
    found by any substring. Another team's conversations never appear."""
    hits, count = search(user=request.auth, query=filters.q, team_id=filters.team_id,
                         limit=filters.limit, offset=filters.offset)
    return SearchPageOut(items=[_hit_out(hit) for hit in hits], count=count)
