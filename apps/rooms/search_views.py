"""The search page behind the header's search box: ``/search/?q=`` finds text in the current
team's conversations (:func:`apps.rooms.search.search`) and links each hit to the room page at
its message. Thin: parse, call the selector, render."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.accounts.current import current_membership
from apps.common.errors import ApplicationError
from apps.common.paging import OFFSET_MAX
from apps.rooms.search import QUERY_MAX_CHARS, SearchHit, search

__all__ = ["search_page"]

PER_PAGE = 20


def _parts(hit: SearchHit) -> tuple[str, str, str]:
    """The snippet as (before, match, after), for ``<mark>`` around the match."""
    start, end = hit.highlight
    return hit.snippet[:start], hit.snippet[start:end], hit.snippet[end:]


def _offset(request: HttpRequest) -> int:
    """``?offset=`` within ``0..OFFSET_MAX`` (a larger one shows the furthest page: an empty
    one past the hits); 0 for anything but a number."""
    try:
        return min(max(0, int(request.GET.get("offset", "0"))), OFFSET_MAX)
    except ValueError:
        return 0


@login_required
@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    """Hits for ``q`` among the current team's conversations, :data:`PER_PAGE` at a time
    (``offset``); a bad query shows why."""
    query = request.GET.get("q", "")
    membership = current_membership(request)
    offset = _offset(request)
    context = {"search_query": query, "max_chars": QUERY_MAX_CHARS, "hits": [], "count": 0,
               "error": "", "offset": offset}
    if query.strip() and membership is not None:
        try:
            hits, count = search(user=membership.user, query=query, team_id=membership.team_id,
                                 limit=PER_PAGE, offset=offset)
        except ApplicationError as error:
            context["error"] = error.message
        else:
            more = offset + len(hits) < count
            context.update(hits=[(hit, _parts(hit)) for hit in hits], count=count,
                           next_offset=offset + PER_PAGE if more else None)
    return render(request, "rooms/search.html", context)
