"""The wiki's REST API under ``/api/teams/{team_id}/wiki/`` (issue 9), mounted by
:mod:`apps.api.api` (token or session auth, its error handlers).

Viewers read; members write; owners and admins also delete. Another team's wiki, an unknown
team, page, revision or file all answer ``404`` with the same body as a missing one. ``{path}``
is the repository path with ``.md`` and may contain slashes (``ops/Runbook.md``); it is
normalized to NFC, as is a rename's ``to``.

- ``GET pages?prefix=`` -> ``[PageInfoOut]``; ``GET pages/{path}?rev=`` -> PageOut;
- ``PUT pages/{path}`` PageSaveIn -> ``201`` WriteOut when created (``expected_blob: null``),
  ``200`` when replaced, ``409`` ConflictOut (also for a create-only write of an existing
  page), ``400`` invalid path or content, ``413`` over a size limit or the quota;
- ``DELETE pages/{path}?expected_blob=`` -> ``200`` WriteOut (``blob`` null): the commit that
  removed it, for a later restore; owners and admins only (members ``403``);
- ``POST pages/{path}/rename`` PageRenameIn, ``POST pages/{path}/restore`` PageRestoreIn ->
  WriteOut;
- ``GET history/{path}`` -> ``[HistoryEntryOut]``; ``GET diff/{path}?from=&to=`` -> DiffOut;
  ``GET search?q=`` -> ``[SearchHitOut]``;
- ``GET files/{path}``, ``PUT files/{path}?expected_blob=&message=`` (raw bytes): attachments
  under ``_files/``.
"""

from __future__ import annotations

import mimetypes
from typing import Annotated

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from ninja import Query, Router, Status

from apps.accounts.models import Team
from apps.common.errors import ApplicationError, ErrorCode, not_found
from apps.common.storable import StorableText
from apps.engine.wiki import HistoryEntry, Page, PageInfo, SearchHit, WriteResult, is_attachment
from apps.wiki.converters import WIKI_PATH, nfc
from apps.wiki.schemas import (
    MESSAGE_MAX,
    READ_ERRORS,
    WRITE_ERRORS,
    ConflictOut,
    DiffOut,
    HistoryEntryOut,
    PageInfoOut,
    PageOut,
    PageRenameIn,
    PageRestoreIn,
    PageSaveIn,
    SearchHitOut,
    WikiErrorOut,
    WriteOut,
)
from apps.wiki.selectors import (
    HISTORY_MAX,
    attachment_read,
    page_diff,
    page_history,
    page_list,
    page_read,
    page_search,
    wiki_membership,
)
from apps.wiki.services import (
    attachment_save,
    page_delete,
    page_rename,
    page_restore,
    page_save,
)

router = Router(tags=["wiki"])

_WIKI = "/teams/{team_id}/wiki"
_PATH = "{" + WIKI_PATH + ":path}"  # slashes allowed, NFC (apps.wiki.converters)
_READ = {READ_ERRORS: WikiErrorOut}
_WRITE = {409: ConflictOut, WRITE_ERRORS: WikiErrorOut}
CommitMessage = Annotated[StorableText, Query("", max_length=MESSAGE_MAX)]
_INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_FILE_RESPONSE = {"responses": {200: {
    "description": "The file's bytes, with its Content-Type.",
    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
}}}
_FILE_BODY = {"requestBody": {"required": True, "content": {
    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}}


def _team(request: HttpRequest, team_id: int) -> Team:
    """The team whose wiki the caller may read (any role)."""
    return wiki_membership(user=request.auth, team_id=team_id).team


# The routes below /pages/{path} with a suffix come first: `{path}` takes slashes.

@router.post(_WIKI + "/pages/" + _PATH + "/rename", response={200: WriteOut, **_WRITE})
def rename_wiki_page(request: HttpRequest, team_id: int, path: StorableText,
                     payload: PageRenameIn) -> WriteResult:
    """Move a page to ``to`` in one commit; its history follows it. ``409`` when it changed
    since ``expected_blob`` or ``to`` exists."""
    return page_rename(team=_team(request, team_id), by=request.auth, path=path, to=payload.to,
                       expected_blob=payload.expected_blob, message=payload.message)


@router.post(_WIKI + "/pages/" + _PATH + "/restore", response={200: WriteOut, **_WRITE})
def restore_wiki_page(request: HttpRequest, team_id: int, path: StorableText,
                      payload: PageRestoreIn) -> WriteResult:
    """Bring back the page as it was at ``rev``, in a new commit (also a deleted page)."""
    return page_restore(team=_team(request, team_id), by=request.auth, path=path,
                        rev=payload.rev, message=payload.message)


@router.get(_WIKI + "/pages", response={200: list[PageInfoOut], **_READ})
def list_wiki_pages(request: HttpRequest, team_id: int,
                    prefix: StorableText = "") -> list[PageInfo]:
    """The pages at ``main`` whose path starts with ``prefix``, by path (``[]`` for a wiki
    nobody wrote yet)."""
    return page_list(team=_team(request, team_id), prefix=nfc(prefix))


@router.get(_WIKI + "/pages/" + _PATH, response={200: PageOut, **_READ})
def get_wiki_page(request: HttpRequest, team_id: int, path: StorableText,
                  rev: StorableText = "HEAD") -> Page:
    """A page at ``rev`` (a 40-hex commit id, default ``HEAD``)."""
    return page_read(team=_team(request, team_id), path=path, rev=rev)


@router.put(_WIKI + "/pages/" + _PATH, response={200: WriteOut, 201: WriteOut, **_WRITE})
def save_wiki_page(request: HttpRequest, team_id: int, path: StorableText,
                   payload: PageSaveIn) -> Status[WriteResult]:
    """Create (``expected_blob: null``, ``201``) or replace (``200``) a page."""
    result = page_save(team=_team(request, team_id), by=request.auth, path=path,
                       content=payload.content, expected_blob=payload.expected_blob,
                       message=payload.message)
    return Status(201 if payload.expected_blob is None else 200, result)


@router.delete(_WIKI + "/pages/" + _PATH, response={200: WriteOut, **_WRITE})
def delete_wiki_page(request: HttpRequest, team_id: int, path: StorableText,
                     expected_blob: StorableText, message: CommitMessage = "") -> WriteResult:
    """Remove a page in a new commit (owners and admins); the answer's ``commit`` is the one
    that removed it."""
    return page_delete(team=_team(request, team_id), by=request.auth, path=path,
                       expected_blob=expected_blob, message=message)


@router.get(_WIKI + "/history/" + _PATH, response={200: list[HistoryEntryOut], **_READ})
def wiki_page_history(request: HttpRequest, team_id: int, path: StorableText,
                      limit: int = Query(50, ge=1, le=HISTORY_MAX)) -> list[HistoryEntry]:
    """The commits that changed the page, newest first, following renames."""
    return page_history(team=_team(request, team_id), path=path, limit=limit)


@router.get(_WIKI + "/diff/" + _PATH, response={200: DiffOut, **_READ}, by_alias=True)
def wiki_page_diff(request: HttpRequest, team_id: int, path: StorableText,
                   from_rev: Annotated[StorableText, Query(alias="from")],
                   to_rev: Annotated[StorableText, Query("HEAD", alias="to")] = "HEAD",
                   ) -> dict[str, str]:
    """The unified diff of the page from revision ``from`` to ``to`` (default ``HEAD``)."""
    diff = page_diff(team=_team(request, team_id), path=path, from_rev=from_rev, to_rev=to_rev)
    return {"path": path, "from": from_rev, "to": to_rev, "diff": diff}


@router.get(_WIKI + "/search", response={200: list[SearchHitOut], **_READ})
def search_wiki(request: HttpRequest, team_id: int,
                q: Annotated[StorableText, Query(min_length=1, max_length=200)],
                limit: int | None = Query(None, ge=1, le=100)) -> list[SearchHit]:
    """Lines of pages containing ``q`` literally, ignoring case (CJK substrings too)."""
    return page_search(team=_team(request, team_id), query=q, limit=limit)


@router.get(_WIKI + "/files/" + _PATH, response={200: None, **_READ},
            openapi_extra=_FILE_RESPONSE)
def get_wiki_file(request: HttpRequest, team_id: int, path: StorableText,
                  rev: StorableText = "HEAD") -> HttpResponse:
    """An attachment's bytes (``_files/...``): images inline, anything else as a download,
    never sniffed."""
    team = _team(request, team_id)
    if not is_attachment(path):
        raise not_found("file")
    data, blob = attachment_read(team=team, path=path, rev=rev)
    kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
    response = HttpResponse(data, content_type=kind)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Disposition"] = "inline" if kind in _INLINE_TYPES else "attachment"
    response["ETag"] = f'"{blob}"'
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@router.put(_WIKI + "/files/" + _PATH, response={200: WriteOut, 201: WriteOut, **_WRITE},
            openapi_extra=_FILE_BODY)
def save_wiki_file(request: HttpRequest, team_id: int, path: StorableText,
                   expected_blob: StorableText | None = None,
                   message: CommitMessage = "") -> Status[WriteResult]:
    """Upload an attachment (the raw bytes as the body) under ``_files/``: create-only without
    ``expected_blob`` (``201``), else replace (``200``)."""
    team = _team(request, team_id)
    result = attachment_save(team=team, by=request.auth, path=path,
                             content=_raw_body(request), expected_blob=expected_blob,
                             message=message)
    return Status(201 if expected_blob is None else 200, result)


def _raw_body(request: HttpRequest) -> bytes:
    """The request body, at most the attachment limit (``too_large`` above it)."""
    limit = settings.CONFAB["WIKI_ATTACHMENT_BYTES"]
    refused = ApplicationError(ErrorCode.TOO_LARGE,
                               _("An attachment is at most %(mib)d MiB.")
                               % {"mib": limit // (1024 * 1024)})
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise refused
    data = request.read(limit + 1)
    if len(data) > limit:
        raise refused
    return data
