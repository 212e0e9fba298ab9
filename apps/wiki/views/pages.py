"""Reading the wiki: the page tree (whole or one folder), a page (at HEAD or a revision), an
attachment's bytes, and search. Viewers read everything members do."""

from __future__ import annotations

import mimetypes
import posixpath
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from apps.accounts.models import Membership, Team
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.wiki import SearchHit, is_attachment, is_page
from apps.wiki import selectors
from apps.wiki.errors import store_errors
from apps.wiki.forms import NewPageForm, UploadForm
from apps.wiki.rendering import page_url, render_markdown
from apps.wiki.stores import store_for, wiki_limits
from apps.wiki.views.common import (
    build_tree,
    crumbs,
    found,
    has_heading,
    page_title,
    reader,
    wiki_urls,
)

__all__ = ["page", "search", "tree", "tree_page"]

SEARCH_MAX = 200
# Shown in the browser; every other type is downloaded (never rendered by the browser).
INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "text/plain"})
ATTACHMENT_CSP = "default-src 'none'; img-src 'self'; sandbox"


@login_required
@require_GET
def tree(request: HttpRequest, team_id: int) -> HttpResponse:
    """Every page of the team's wiki as a tree of folders, the attachments, and the forms to
    create a page or upload a file (members)."""
    return tree_page(request, reader(request, team_id))


def tree_page(request: HttpRequest, membership: Membership, prefix: str = "", *,
              upload_form: UploadForm | None = None, upload_error: str = "",
              status: int = 200) -> HttpResponse:
    """The tree page of ``prefix`` ("" for all) as ``membership`` sees it."""
    team = membership.team
    pages = selectors.page_list(team=team, prefix=prefix)
    if prefix and not pages:
        raise Http404("No such folder.")
    with store_errors():
        files = [] if prefix else [info for info in store_for(team).list("_files/")
                                   if is_attachment(info.path)]
    return render(request, "wiki/tree.html", {
        "team": team, "membership": membership, "prefix": prefix,
        "can_write": membership.role_enum.can_write,
        "can_delete": membership.role_enum.can_manage,
        "root": build_tree(team.pk, pages, prefix), "page_count": len(pages),
        "attachments": [(info, wiki_urls(team.pk, info.path)) for info in files],
        "crumbs": crumbs(team.pk, prefix) if prefix else [],
        "new_form": NewPageForm(initial={"path": prefix}),
        "upload_form": upload_form or UploadForm(), "upload_error": upload_error,
        "upload_limit": wiki_limits().attachment_bytes,
        "urls": wiki_urls(team.pk, prefix),
    }, status=status)


@login_required
@require_GET
def page(request: HttpRequest, team_id: int, path: str) -> HttpResponse:
    """``/teams/<id>/wiki/<path>``: a page (``?rev=<commit>`` for an old revision), a folder
    (a path ending in ``/``) or an attachment (``_files/...``)."""
    membership = reader(request, team_id)
    if path.endswith("/"):
        return tree_page(request, membership, path)
    if is_attachment(path):
        return _attachment(membership, path, request.GET.get("rev") or "HEAD")
    if not is_page(path):
        if selectors.page_list(team=membership.team, prefix=f"{path}/"):
            return redirect(page_url(team_id, f"{path}/"))  # a folder, without its slash
        raise Http404("No such page.")
    rev = request.GET.get("rev") or "HEAD"
    try:
        current = selectors.page_read(team=membership.team, path=path, rev=rev)
    except ApplicationError as error:
        if rev == "HEAD" and error.code is ErrorCode.NOT_FOUND:
            return _missing(request, membership, path)
        raise Http404("No such page.") from None
    team = membership.team
    history = found(lambda: selectors.page_history(team=team, path=path, limit=1))
    existing = {info.path for info in selectors.page_list(team=team)}
    return render(request, "wiki/page.html", {
        "team": team, "membership": membership, "path": path, "page": current,
        "title": page_title(path, current.content), "crumbs": crumbs(team.pk, path),
        "has_heading": has_heading(current.content),
        "html": render_markdown(current.content, team_id=team.pk, page_path=path,
                                existing=existing),
        "last": history[0] if history else None,
        "old_rev": rev if rev != "HEAD" else None,
        "can_write": membership.role_enum.can_write,
        "can_delete": membership.role_enum.can_manage,
        "urls": wiki_urls(team.pk, path),
    })


def _missing(request: HttpRequest, membership: Membership, path: str) -> HttpResponse:
    """A page nobody wrote yet (a link to it, a typed URL): 404, with a way to create it."""
    return render(request, "wiki/missing.html", {
        "team": membership.team, "membership": membership, "path": path,
        "title": page_title(path), "crumbs": crumbs(membership.team_id, path),
        "can_write": membership.role_enum.can_write,
        "had_history": _had_history(membership, path),
        "urls": wiki_urls(membership.team_id, path),
    }, status=404)


def _had_history(membership: Membership, path: str) -> bool:
    try:
        return bool(selectors.page_history(team=membership.team, path=path, limit=1))
    except ApplicationError:
        return False


def _attachment(membership: Membership, path: str, rev: str) -> HttpResponse:
    """The file's bytes at ``rev`` (a commit from its history, or HEAD): images and plain text
    inline, everything else as a download; no type sniffing, and a sandbox CSP in case a
    browser renders it anyway."""
    content, blob = found(lambda: selectors.attachment_read(team=membership.team, path=path,
                                                            rev=rev))
    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
    response = HttpResponse(content, content_type=(
        f"{kind}; charset=utf-8" if kind.startswith("text/") else kind))
    disposition = "inline" if kind in INLINE_TYPES else "attachment"
    name = posixpath.basename(path)
    response["Content-Disposition"] = f"{disposition}; filename*=UTF-8''{quote(name, safe='')}"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = ATTACHMENT_CSP
    response["Cache-Control"] = "private, no-cache"
    response["ETag"] = f'"{blob}"'
    return response


@dataclass(frozen=True, slots=True)
class _Result:
    path: str
    title: str
    url: str
    lines: list[tuple[int, list[tuple[str, bool]]]]


@login_required
@require_GET
def search(request: HttpRequest, team_id: int) -> HttpResponse:
    """``?q=``: the lines of pages that contain the text (literally, any case, CJK too),
    grouped by page."""
    membership = reader(request, team_id)
    team = membership.team
    query = (request.GET.get("q") or "").strip()[:SEARCH_MAX]
    hits, refused = _searched(team, query)
    titles = {info.path: info.title for info in selectors.page_list(team=team)} if hits else {}
    results: dict[str, _Result] = {}
    for hit in hits:
        result = results.get(hit.path)
        if result is None:
            result = results[hit.path] = _Result(
                hit.path, titles.get(hit.path) or page_title(hit.path),
                page_url(team.pk, hit.path), [])
        result.lines.append((hit.line, _marked(hit, query)))
    context: dict[str, Any] = {
        "team": team, "membership": membership, "query": query,
        "results": list(results.values()), "hit_count": len(hits),
        "urls": wiki_urls(team.pk, ""), "can_write": membership.role_enum.can_write,
        "refused": refused,
    }
    return render(request, "wiki/search.html", context, status=400 if refused else 200)


def _searched(team: Team, query: str) -> tuple[list[SearchHit], bool]:
    """The hits for ``query`` and whether the store refused it (a NUL or a line break in it:
    the page says what a search may be instead of failing)."""
    if not query:
        return [], False
    try:
        return selectors.page_search(team=team, query=query), False
    except ApplicationError as error:
        if error.code is not ErrorCode.INVALID:
            raise
        return [], True


def _marked(hit: SearchHit, query: str) -> list[tuple[str, bool]]:
    """The snippet cut into (text, is the match) pieces, for <mark>."""
    pieces: list[tuple[str, bool]] = []
    text, needle = hit.snippet, query.casefold()
    folded = text.casefold()
    start = 0
    if len(folded) != len(text):  # case folding changed lengths (ß): no highlighting
        return [(text, False)]
    while needle and (found_at := folded.find(needle, start)) >= 0:
        pieces += [(text[start:found_at], False), (text[found_at:found_at + len(needle)], True)]
        start = found_at + len(needle)
    pieces.append((text[start:], False))
    return [piece for piece in pieces if piece[0]]
