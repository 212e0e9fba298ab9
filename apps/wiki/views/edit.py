"""Writing a page: the editor (with a live preview rendered here), saving against the blob the
editor started from, and the conflict screen when someone else's change overlaps.

A save names the blob (and commit) the editor read. When the page changed meanwhile the store
merges three ways: a clean merge is saved and the page says so; an overlapping one answers 409
with the conflict screen — what changed meanwhile, the person's text, the current text, and the
merged text with git's markers in an editable box — to be saved against the *current* blob.
Nobody's change is lost: the person's text is always on the screen until they save.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.models import Membership
from apps.common.errors import ApplicationError, ErrorCode
from apps.common.web import refusal
from apps.engine.wiki import WikiError, is_page
from apps.engine.wiki.paths import check_file_path
from apps.wiki import selectors
from apps.wiki.errors import WikiConflictError
from apps.wiki.forms import EditForm, NewPageForm, PreviewForm
from apps.wiki.rendering import diff_lines, page_url, render_markdown
from apps.wiki.services import page_save
from apps.wiki.stores import wiki_limits
from apps.wiki.views.common import crumbs, page_title, user_of, wiki_urls, writer

__all__ = ["edit", "new_page", "preview"]


@login_required
@require_http_methods(["GET", "POST"])
def edit(request: HttpRequest, team_id: int, path: str) -> HttpResponse:
    """The editor of ``path`` (a new page when it does not exist yet); POST saves."""
    membership = writer(request, team_id)
    _check_page_path(path)
    if request.method == "POST":
        return _save(request, membership, path)
    team = membership.team
    try:
        current = selectors.page_read(team=team, path=path)
    except ApplicationError as error:
        if error.code is not ErrorCode.NOT_FOUND:
            raise
        form = EditForm(initial={"content": f"# {page_title(path)}\n\n", "expected_blob": "",
                                 "base_commit": selectors.wiki_head(team=team) or ""})
        return _editor(request, membership, path, form, new=True)
    form = EditForm(initial={"content": current.content, "expected_blob": current.blob,
                             "base_commit": current.commit})
    return _editor(request, membership, path, form, new=False)


def _check_page_path(path: str) -> None:
    """A path the rules refuse, or one that is no page, has no editor (404)."""
    try:
        check_file_path(path, attachment_extensions=wiki_limits().attachment_extensions)
    except WikiError:
        raise Http404("No such page.") from None
    if not is_page(path):
        raise Http404("No such page.")


def _save(request: HttpRequest, membership: Membership, path: str) -> HttpResponse:
    form = EditForm(request.POST)
    new = not request.POST.get("expected_blob")
    if not form.is_valid():
        return _editor(request, membership, path, form, new=new, status=400)
    data = form.cleaned_data
    try:
        result = page_save(team=membership.team, by=user_of(request), path=path,
                           content=data["content"], expected_blob=data["expected_blob"] or None,
                           message=data["message"])
    except WikiConflictError as conflict:
        return _conflict(request, membership, path, form, conflict)
    except ApplicationError as error:
        if error.code in (ErrorCode.NOT_FOUND, ErrorCode.FORBIDDEN):
            refusal(request, error)
        form.add_error(None, error.message)
        return _editor(request, membership, path, form, new=new, status=error.status)
    if not result.changed:
        messages.info(request, _("Nothing to save: the page already says this."))
    elif result.merged:
        messages.success(request, _("Saved. Someone else changed this page meanwhile: their "
                                    "change and yours were merged."))
    else:
        messages.success(request, _("Created the page.") if new else _("Saved."))
    return redirect(page_url(membership.team_id, path))


def _editor(request: HttpRequest, membership: Membership, path: str, form: EditForm, *,
            new: bool, status: int = 200, extra: dict[str, Any] | None = None,
            template: str = "wiki/edit.html") -> HttpResponse:
    content = form["content"].value() or ""
    team = membership.team
    return render(request, template, {
        "team": team, "membership": membership, "path": path, "form": form, "new": new,
        "title": page_title(path, content), "crumbs": crumbs(team.pk, path),
        "preview": render_markdown(content, team_id=team.pk, page_path=path),
        "urls": wiki_urls(team.pk, path), "page_limit": wiki_limits().page_bytes,
        **(extra or {}),
    }, status=status)


def _conflict(request: HttpRequest, membership: Membership, path: str, form: EditForm,
              conflict: WikiConflictError) -> HttpResponse:
    """The conflict screen (409): to be saved against the page as it is now."""
    team = membership.team
    mine = form.cleaned_data["content"]
    current = conflict.current
    base_commit = form.cleaned_data["base_commit"]
    try:
        history = selectors.page_history(team=team, path=path, limit=1)
    except ApplicationError:
        history = []
    meanwhile: list[Any] = []
    if base_commit and current is not None:
        try:
            meanwhile = [line for line in diff_lines(selectors.page_diff(
                team=team, path=path, from_rev=base_commit, to_rev="HEAD"))
                if line.kind != "meta"]  # the lines, without git's headers
        except ApplicationError:
            meanwhile = []  # the page was new at the base: its current text says it all
    resolved = EditForm(initial={
        "content": conflict.merged_text if conflict.merged_text is not None else mine,
        "expected_blob": current.blob if current is not None else "",
        "base_commit": selectors.wiki_head(team=team) or "",
        "message": form.cleaned_data["message"],
    })
    return _editor(request, membership, path, resolved, new=current is None, status=409,
                   template="wiki/conflict.html", extra={
                       "mine": mine, "current": current, "merged": conflict.merged_text,
                       "changed_by": history[0].commit.author_name if history else "",
                       "changed_at": history[0].commit.date if history else None,
                       "meanwhile": meanwhile, "reason": conflict.message,
                   })


@login_required
@require_POST
def preview(request: HttpRequest, team_id: int) -> HttpResponse:
    """The editor's text as the page will show it: the same renderer and sanitizer (an HTML
    fragment; the editor's script puts it in the preview pane)."""
    membership = writer(request, team_id)
    form = PreviewForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("Bad preview request.")
    team = membership.team
    content = form.cleaned_data["content"]
    if len(content.encode()) > wiki_limits().page_bytes:
        return HttpResponse('<p class="wiki-preview-note">Too long to preview: the page is '
                            'over the size limit.</p>', status=413)
    existing = {info.path for info in selectors.page_list(team=team)}
    html = render_markdown(content, team_id=team.pk, page_path=form.cleaned_data["path"],
                           existing=existing)
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_http_methods(["GET"])
def new_page(request: HttpRequest, team_id: int) -> HttpResponse:
    """``?path=Folder/Name``: the editor of that page (or the page, when it exists)."""
    membership = writer(request, team_id)
    form = NewPageForm(request.GET)
    if not form.is_valid():
        messages.error(request, _("Name the page to create, like 'Team/Onboarding'."))
        return redirect("wiki:tree", team_id=membership.team_id)
    path = form.cleaned_data["path"]
    try:
        check_file_path(path, attachment_extensions=wiki_limits().attachment_extensions)
    except WikiError as error:
        messages.error(request, error.message)
        return redirect("wiki:tree", team_id=membership.team_id)
    if not is_page(path):
        messages.error(request, _("Pages cannot live under _files/: that folder holds "
                                  "attachments."))
        return redirect("wiki:tree", team_id=membership.team_id)
    return redirect("wiki:edit", team_id=membership.team_id, path=path)
