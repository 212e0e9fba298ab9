"""A page's history (who, when, message, and the agent's run when it wrote), the diff between
any two revisions, and restoring an old one (a new commit: history is never rewritten)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.models import Team
from apps.common.errors import ApplicationError
from apps.common.web import refusal
from apps.engine.wiki import HistoryEntry
from apps.wiki import selectors
from apps.wiki.forms import RestoreForm
from apps.wiki.rendering import diff_lines, page_url
from apps.wiki.services import page_restore
from apps.wiki.views.common import crumbs, found, page_title, reader, user_of, wiki_urls, writer

__all__ = ["diff", "history", "restore"]

HISTORY_SHOWN = 100


@dataclass(frozen=True, slots=True)
class Revision:
    """One row of the history page."""

    entry: HistoryEntry
    url: str  # the page as it was then
    previous: str | None  # the commit before it (for "what changed"), None for the first
    run: str | None  # the agent's run id (the Confab-Run trailer)
    conversation_url: str | None  # where that run happened

    @property
    def commit(self) -> str:
        return self.entry.commit.commit


def _revisions(team_id: int, entries: list[HistoryEntry]) -> list[Revision]:
    rows = []
    for index, entry in enumerate(entries):
        trailers = entry.commit.trailers
        previous = entries[index + 1].commit.commit if index + 1 < len(entries) else None
        rows.append(Revision(
            entry=entry, url=f"{page_url(team_id, entry.path)}?rev={entry.commit.commit}",
            previous=previous, run=trailers.get("Confab-Run"),
            conversation_url=_conversation_url(trailers.get("Confab-Conversation"))))
    return rows


def _conversation_url(value: str | None) -> str | None:
    if not value or not value.isdigit():
        return None
    try:  # the room page (apps.rooms is above the wiki: its URL by name, not by import)
        return reverse("rooms:conversation", kwargs={"conversation_id": int(value)})
    except NoReverseMatch:
        return None


@login_required
@require_GET
def history(request: HttpRequest, team_id: int, path: str) -> HttpResponse:
    """The commits that changed the page, newest first, following renames; pick two to
    compare; members restore an old one."""
    membership = reader(request, team_id)
    team = membership.team
    entries = found(lambda: selectors.page_history(team=team, path=path, limit=HISTORY_SHOWN))
    if not entries:
        raise Http404("No such page.")
    exists = _exists(team, path)
    return render(request, "wiki/history.html", {
        "team": team, "membership": membership, "path": path, "title": page_title(path),
        "crumbs": crumbs(team.pk, path), "revisions": _revisions(team.pk, entries),
        "exists": exists, "can_write": membership.role_enum.can_write,
        "urls": wiki_urls(team.pk, path),
    })


def _exists(team: Team, path: str) -> bool:
    try:
        selectors.page_read(team=team, path=path)
    except ApplicationError:
        return False
    return True


@login_required
@require_GET
def diff(request: HttpRequest, team_id: int, path: str) -> HttpResponse:
    """``?from=<commit>&to=<commit>`` (``to`` defaults to HEAD): the unified diff of the page.
    Anything but a full commit id is a 404, like a revision that does not exist."""
    membership = reader(request, team_id)
    team = membership.team
    from_rev = request.GET.get("from", "")
    to_rev = request.GET.get("to") or "HEAD"
    text = found(lambda: selectors.page_diff(team=team, path=path, from_rev=from_rev,
                                             to_rev=to_rev))
    return render(request, "wiki/diff.html", {
        "team": team, "membership": membership, "path": path, "title": page_title(path),
        "crumbs": crumbs(team.pk, path), "lines": diff_lines(text),
        "from_rev": from_rev, "to_rev": to_rev,
        "from_url": f"{page_url(team.pk, path)}?rev={from_rev}",
        "to_url": page_url(team.pk, path) + ("" if to_rev == "HEAD" else f"?rev={to_rev}"),
        "urls": wiki_urls(team.pk, path),
    })


@login_required
@require_POST
def restore(request: HttpRequest, team_id: int, path: str) -> HttpResponse:
    """Make the page what it was at ``rev`` again, in a new commit."""
    membership = writer(request, team_id)
    form = RestoreForm(request.POST)
    if not form.is_valid():
        raise Http404("No such revision.")
    rev = form.cleaned_data["rev"]
    try:
        page_restore(team=membership.team, by=user_of(request), path=path, rev=rev,
                     message=form.cleaned_data["message"])
    except ApplicationError as error:
        refusal(request, error)  # 404 / 403, else the reason on the history page
        return redirect("wiki:history", team_id=team_id, path=path)
    messages.success(request, _("Restored the version of %(rev)s: it is the newest revision "
                                "now, and the history keeps every other one.") % {"rev": rev[:10]})
    return redirect(page_url(team_id, path))
