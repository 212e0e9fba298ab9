"""Reads of a team's wiki (issue 9): who may see it, and its pages, files, history and search.

``wiki_membership`` decides who sees a wiki: a member of any role (viewers read). Every other
function reads the wiki of a ``team`` the caller has already authorized that way (or, for the
agent's tools, the team of the run): never a team named by request text alone.

They are synchronous and may block on git for a few seconds: async callers use
``asyncio.to_thread`` (or ``database_sync_to_async`` for ``wiki_membership``). Store refusals
come out as ApplicationError (:mod:`apps.wiki.errors`): a missing page, revision or file, and
every malformed revision, is ``not_found``.
"""

from __future__ import annotations

from apps.accounts.models import Membership, Team, User
from apps.accounts.selectors import amembership_of, membership_of
from apps.common.errors import not_found
from apps.engine.wiki import HistoryEntry, Page, PageInfo, SearchHit, is_page
from apps.wiki.errors import store_errors
from apps.wiki.stores import store_for

__all__ = [
    "attachment_read",
    "awiki_membership",
    "page_diff",
    "page_history",
    "page_list",
    "page_read",
    "page_search",
    "wiki_head",
    "wiki_membership",
]

HISTORY_MAX = 200
"""The most commits one history answer lists."""


def wiki_membership(*, user: User, team_id: int) -> Membership:
    """``user``'s membership of team ``team_id`` (``team`` loaded), any role; ``not_found
    ("wiki")`` for an anonymous user, a non-member and an unknown team alike."""
    membership = membership_of(user, team_id)
    if membership is None:
        raise not_found("wiki")
    return membership


async def awiki_membership(*, user: User, team_id: int) -> Membership:
    """Async form of :func:`wiki_membership`."""
    membership = await amembership_of(user, team_id)
    if membership is None:
        raise not_found("wiki")
    return membership


def wiki_head(*, team: Team) -> str | None:
    """The commit ``main`` is at, or None while nobody has written the wiki."""
    with store_errors():
        return store_for(team).head()


def page_list(*, team: Team, prefix: str = "") -> list[PageInfo]:
    """The pages (``.md`` files, attachments left out) whose path starts with ``prefix``, by
    path; ``[]`` for an empty wiki."""
    with store_errors():
        files = store_for(team).list(prefix)
    return [info for info in files if is_page(info.path)]


def page_read(*, team: Team, path: str, rev: str = "HEAD") -> Page:
    """The page ``path`` at ``rev`` (40-hex commit id or ``HEAD``): ``{path, content, blob,
    commit}``. ``not_found`` for a missing page or revision, ``invalid`` for a path the rules
    refuse."""
    with store_errors():
        return store_for(team).read(path, rev)


def attachment_read(*, team: Team, path: str, rev: str = "HEAD") -> tuple[bytes, str]:
    """The bytes and blob id of the file ``path`` (``_files/...``) at ``rev``; ``not_found``
    ("No such file.") when it is not there."""
    with store_errors(what="file"):
        return store_for(team).read_bytes(path, rev)


def page_history(*, team: Team, path: str, limit: int = 50) -> list[HistoryEntry]:
    """The commits that changed ``path``, newest first, following renames (at most ``limit``,
    capped at :data:`HISTORY_MAX`); ``not_found`` for a path no commit ever touched."""
    with store_errors():
        return store_for(team).history(path, limit=max(1, min(limit, HISTORY_MAX)))


def page_diff(*, team: Team, path: str, from_rev: str, to_rev: str = "HEAD") -> str:
    """The unified diff of ``path`` from ``from_rev`` to ``to_rev`` ("" when equal);
    ``not_found`` for an unknown or malformed revision."""
    with store_errors():
        return store_for(team).diff(path, from_rev, to_rev)


def page_search(*, team: Team, query: str, limit: int | None = None) -> list[SearchHit]:
    """Lines of pages at ``main`` containing ``query`` literally, ignoring case (CJK too):
    ``[{path, line, snippet}]``, at most ``limit`` (default: the store's cap)."""
    with store_errors():
        return store_for(team).search(query, limit=limit)
