"""Search across the conversations a person may see: titles and what was said (issue 19).

Literal and case-insensitive substring search, so Chinese (no spaces between words) is found
like any other text: ``icontains`` over ``Conversation.title`` and ``Message.search_text``
(:mod:`apps.rooms.plain_text`; the JSON ``content`` column cannot be searched on SQLite, which
stores non-ASCII there as ``\\uXXXX``). On SQLite that is ``LIKE`` (case-insensitive for ASCII),
on PostgreSQL ``UPPER(..) LIKE UPPER(..)``.

Cost: a ``LIKE '%q%'`` cannot use an index, so a query reads the title and text of every
message of the person's teams once (plus once more for the count). That is fine at the scale
confab runs at (a team's few hundred thousand messages); past it, a trigram index
(PostgreSQL ``pg_trgm``) or a search table would take over. The query is bounded:
at most :data:`QUERY_MAX_CHARS` characters, at most the caller's ``limit`` hits read.

Only what the person may see: conversations of the teams they belong to, not archived, in
rooms that are not archived; messages of the transcript as the room shows it (earlier
versions, compacted messages and text still streaming left out). Another team's conversations
never appear, whatever the query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import QuerySet
from django.urls import reverse
from django.utils.translation import gettext

from apps.accounts.models import User
from apps.common.errors import ApplicationError, ErrorCode
from apps.rooms.models import CURRENT_VERSION, Conversation, Message, MessageStatus

__all__ = ["QUERY_MAX_CHARS", "SearchHit", "search"]

QUERY_MAX_CHARS = 100
SNIPPET_CHARS = 160
"""Characters of text around a match that a hit shows."""
_BEFORE_MATCH = 50


@dataclass(frozen=True)
class SearchHit:
    """One hit: a conversation's title (``message`` None) or one of its messages.

    ``snippet`` is the text around the match on one line (``…`` where it was cut) and
    ``highlight`` the match's ``(start, end)`` in it, in characters (code points); ``url``
    opens the room page at the message (``#message-<id>``).
    """

    conversation: Conversation
    message: Message | None
    snippet: str
    highlight: tuple[int, int]

    @property
    def url(self) -> str:
        page = reverse("rooms:conversation", args=[self.conversation.pk])
        return f"{page}#message-{self.message.pk}" if self.message else page


def _clean(query: str) -> str:
    text = query.strip()  # inner spaces kept: the stored text keeps its own (a literal match)
    if "\x00" in text:  # PostgreSQL cannot compare with it (apps.common.storable)
        raise ApplicationError(ErrorCode.INVALID, gettext(
            "Search text cannot hold a NUL character."))
    if not text:
        raise ApplicationError(ErrorCode.INVALID, gettext("Search for at least one character."))
    if len(text) > QUERY_MAX_CHARS:
        raise ApplicationError(ErrorCode.INVALID, gettext(
            "Search for at most %(n)s characters.") % {"n": QUERY_MAX_CHARS})
    return text


def _visible(user: User, team_id: int | None) -> QuerySet[Conversation]:
    conversations = Conversation.objects.filter(room__team__memberships__user=user,
                                                archived=False, room__archived=False)
    return conversations.filter(room__team__id=team_id) if team_id is not None else conversations


def _snippet(text: str, query: str) -> tuple[str, tuple[int, int]]:
    """The text around the first match of ``query``, and where the match is in it."""
    flat = re.sub(r"\s", " ", text)  # one character for one: the offsets stay right
    found = re.search(re.escape(query), flat, re.IGNORECASE)
    if found is None:  # the database's case rules matched what Python's do not
        return flat[:SNIPPET_CHARS], (0, 0)
    start = max(0, found.start() - _BEFORE_MATCH)
    end = min(len(flat), max(start + SNIPPET_CHARS, found.end()))
    lead = "…" if start else ""
    snippet = lead + flat[start:end] + ("…" if end < len(flat) else "")
    offset = len(lead) - start
    return snippet, (found.start() + offset, found.end() + offset)


def _hit(conversation: Conversation, message: Message | None, text: str,
         query: str) -> SearchHit:
    snippet, highlight = _snippet(text, query)
    return SearchHit(conversation=conversation, message=message, snippet=snippet,
                     highlight=highlight)


def search(*, user: User, query: str, team_id: int | None = None, limit: int = 20,
           offset: int = 0) -> tuple[list[SearchHit], int]:
    """The hits for ``query`` among what ``user`` may see (of one team if ``team_id``) and how
    many there are in all: titles first (newest conversation first), then messages (newest
    first); ``limit`` hits from ``offset``. ``invalid`` for a blank query or one longer than
    :data:`QUERY_MAX_CHARS` once stripped; inner spaces match literally."""
    text = _clean(query)
    conversations = _visible(user, team_id)
    titles = (conversations.filter(title__icontains=text).select_related("room__team")
              .order_by("-created_at", "-id"))
    messages = (Message.objects
                .filter(CURRENT_VERSION, conversation__in=conversations.values("pk"),
                        search_text__icontains=text, compacted=False)
                .exclude(status=MessageStatus.STREAMING)
                .select_related("conversation__room__team").order_by("-id"))
    title_count = titles.count()
    hits = [_hit(c, None, c.title, text) for c in titles[offset:offset + limit]]
    skip = max(0, offset - title_count)
    wanted = limit - len(hits)
    if wanted > 0:
        rows = messages[skip:skip + wanted]
        hits += [_hit(m.conversation, m, m.search_text, text) for m in rows]
    return hits, title_count + messages.count()
