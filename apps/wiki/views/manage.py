"""Renaming and deleting pages (and attachments), and uploading attachments.

Members rename and upload; owners and admins also delete (the services decide; these pages
show the forms). Each write names the blob it was shown, so a page changed meanwhile is not
renamed or deleted blind: the person sees it changed and tries again.
"""

from __future__ import annotations

import posixpath

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.models import Membership
from apps.common.errors import ApplicationError, ErrorCode
from apps.common.web import refusal
from apps.engine.wiki import is_attachment
from apps.wiki import selectors
from apps.wiki.converters import nfc
from apps.wiki.forms import DeleteForm, RenameForm, UploadForm
from apps.wiki.rendering import page_url
from apps.wiki.services import attachment_save, page_delete, page_rename
from apps.wiki.stores import wiki_limits
from apps.wiki.views.common import crumbs, found, page_title, user_of, wiki_urls, writer
from apps.wiki.views.pages import tree_page

__all__ = ["delete", "rename", "upload"]


def _blob(membership: Membership, path: str) -> str:
    """The blob of ``path`` at HEAD (404 when it is not there)."""
    if is_attachment(path):
        return found(lambda: selectors.attachment_read(team=membership.team, path=path))[1]
    return found(lambda: selectors.page_read(team=membership.team, path=path)).blob


def _form_page(request: HttpRequest, membership: Membership, path: str, template: str,
               form: RenameForm | DeleteForm, status: int = 200, error: str = "") -> HttpResponse:
    team = membership.team
    return render(request, template, {
        "team": team, "membership": membership, "path": path, "form": form,
        "title": page_title(path), "crumbs": crumbs(team.pk, path),
        "attachment": is_attachment(path), "urls": wiki_urls(team.pk, path), "error": error,
    }, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def rename(request: HttpRequest, team_id: int, path: str) -> HttpResponse:
    """Move a page (or an attachment) to another name; its history follows it."""
    membership = writer(request, team_id)
    blob = _blob(membership, path)
    if request.method == "GET":
        form = RenameForm(initial={"to": path, "expected_blob": blob})
        return _form_page(request, membership, path, "wiki/rename.html", form)
    form = RenameForm(request.POST)
    if not form.is_valid():
        return _form_page(request, membership, path, "wiki/rename.html", form, 400)
    try:
        result = page_rename(team=membership.team, by=user_of(request), path=path,
                             to=form.cleaned_data["to"],
                             expected_blob=form.cleaned_data["expected_blob"],
                             message=form.cleaned_data["message"])
    except ApplicationError as error:
        return _refused(request, membership, path, "wiki/rename.html", error,
                        RenameForm(initial={"to": form.cleaned_data["to"], "expected_blob": blob,
                                            "message": form.cleaned_data["message"]}))
    messages.success(request, _("Renamed %(old)s to %(new)s.") % {"old": path, "new": result.path})
    return redirect(page_url(team_id, result.path))


@login_required
@require_http_methods(["GET", "POST"])
def delete(request: HttpRequest, team_id: int, path: str) -> HttpResponse:
    """Remove a page or an attachment (owners and admins); its history stays, and any member
    can restore it from there."""
    membership = writer(request, team_id, delete=True)
    blob = _blob(membership, path)
    if request.method == "GET":
        form = DeleteForm(initial={"expected_blob": blob})
        return _form_page(request, membership, path, "wiki/delete.html", form)
    form = DeleteForm(request.POST)
    if not form.is_valid():
        return _form_page(request, membership, path, "wiki/delete.html", form, 400)
    try:
        page_delete(team=membership.team, by=user_of(request), path=path,
                    expected_blob=form.cleaned_data["expected_blob"],
                    message=form.cleaned_data["message"])
    except ApplicationError as error:
        return _refused(request, membership, path, "wiki/delete.html", error,
                        DeleteForm(initial={"expected_blob": blob,
                                            "message": form.cleaned_data["message"]}))
    messages.success(request, _("Deleted %(path)s. Its history stays: restore it from there.")
                     % {"path": path})
    return redirect("wiki:tree", team_id=team_id)


def _refused(request: HttpRequest, membership: Membership, path: str, template: str,
             error: ApplicationError, form: RenameForm | DeleteForm) -> HttpResponse:
    """404 / 403 as such; any other refusal (a conflict: the page changed meanwhile; a name
    taken or refused) shown above the form again, now with the current blob."""
    if error.code in (ErrorCode.NOT_FOUND, ErrorCode.FORBIDDEN):
        refusal(request, error)
    text = error.message
    if error.code is ErrorCode.CONFLICT:
        text = f"{error.message} Look at the page again, then retry."
    return _form_page(request, membership, path, template, form, error.status, text)


@login_required
@require_POST
def upload(request: HttpRequest, team_id: int) -> HttpResponse:
    """Store a file under ``_files/``: an allowed type within the size limit, else the tree
    page again with the reason (400 for the type, 413 for the size)."""
    membership = writer(request, team_id)
    form = UploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return tree_page(request, membership, upload_form=form, status=400)
    upload_file = form.cleaned_data["file"]
    # macOS names files decomposed (NFD); the store takes NFC only.
    name = nfc(form.cleaned_data["name"] or posixpath.basename(upload_file.name or ""))
    path = f"_files/{name.strip().strip('/')}"
    limit = wiki_limits().attachment_bytes
    if upload_file.size > limit:  # before reading it all into memory
        return tree_page(request, membership, upload_form=form, status=413, upload_error=_(
            "%(name)s is %(size)s bytes: attachments may be at most %(limit)s.")
            % {"name": name, "size": number_format(upload_file.size, force_grouping=True),
               "limit": number_format(limit, force_grouping=True)})
    try:
        result = attachment_save(team=membership.team, by=user_of(request), path=path,
                                 content=upload_file.read(), expected_blob=_current_blob(
                                     membership, path), message=f"Upload {path}")
    except ApplicationError as error:
        if error.code in (ErrorCode.NOT_FOUND, ErrorCode.FORBIDDEN):
            refusal(request, error)
        return tree_page(request, membership, upload_form=form, status=error.status,
                         upload_error=f"{name}: {error.message}")
    messages.success(request, _("Uploaded %(path)s. Link it from a page as ![%(name)s](%(path)s) "
                                "or [%(name)s](%(path)s).") % {"path": result.path, "name": name})
    return redirect("wiki:tree", team_id=team_id)


def _current_blob(membership: Membership, path: str) -> str | None:
    """The blob of an attachment of that name, to replace it (None: a new file)."""
    try:
        return selectors.attachment_read(team=membership.team, path=path)[1]
    except ApplicationError:
        return None
