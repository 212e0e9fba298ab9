"""What every wiki page starts with: the caller's membership of the team in the URL, the
answers for a refusal, and the bits of context every wiki template shows.

Another team's wiki answers exactly like a team that does not exist (Django's 404 from
``wiki_membership``); a viewer asking for a writer's page gets 403; a malformed path or revision
in a URL is a 404 too (nothing of it is echoed back).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.urls import reverse
from django.utils.translation import gettext as _

from apps.accounts.models import Membership, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.wiki import PageInfo
from apps.wiki.rendering import page_url
from apps.wiki.selectors import wiki_membership

__all__ = ["Crumb", "Folder", "build_tree", "crumbs", "found", "has_heading", "page_title",
           "reader",
           "user_of", "wiki_urls", "writer"]

_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def user_of(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required ran first
    return user


def reader(request: HttpRequest, team_id: int) -> Membership:
    """The caller's membership of ``team_id`` (any role reads); 404 for everyone else."""
    return found(lambda: wiki_membership(user=user_of(request), team_id=team_id))


def writer(request: HttpRequest, team_id: int, *, delete: bool = False) -> Membership:
    """As :func:`reader`, and 403 for a viewer (with ``delete``: for anyone but owners and
    admins). The services check the same again; this is for the pages that show a form."""
    membership = reader(request, team_id)
    if not membership.role_enum.can_write:
        raise PermissionDenied(_("Viewers read the wiki; members edit it."))
    if delete and not membership.role_enum.can_manage:
        raise PermissionDenied(_("Only owners and admins delete wiki pages."))
    return membership


def found[T](lookup: Callable[[], T]) -> T:
    """``lookup()``; a ``not_found`` (or a path the rules refuse, on a read) is Django's 404."""
    try:
        return lookup()
    except ApplicationError as error:
        if error.code in (ErrorCode.NOT_FOUND, ErrorCode.INVALID):
            raise Http404(error.message) from None
        raise


def page_title(path: str, content: str | None = None) -> str:
    """The page's first ``# `` heading, else its file name without ``.md``."""
    match = _HEADING.search(content or "")
    if match:
        return match.group(1).strip()
    name = posixpath.basename(path)
    return name[:-3] if name.endswith(".md") else name


def has_heading(content: str) -> bool:
    """Whether the page names itself with a ``# `` heading (else its page shows its name)."""
    return _HEADING.search(content or "") is not None


@dataclass(frozen=True, slots=True)
class Crumb:
    name: str
    url: str


def crumbs(team_id: int, path: str) -> list[Crumb]:
    """The wiki's root and each folder above ``path`` (a page, or a folder ending in ``/``)."""
    trail = [Crumb("Wiki", reverse("wiki:tree", kwargs={"team_id": team_id}))]
    folder = path if path.endswith("/") else posixpath.dirname(path)
    parts = [part for part in folder.split("/") if part]
    for depth in range(len(parts)):
        folder = "/".join(parts[:depth + 1]) + "/"
        trail.append(Crumb(parts[depth], page_url(team_id, folder)))
    return trail


@dataclass
class Folder:
    """A folder of the page tree: its sub-folders and pages, each sorted by name."""

    name: str
    path: str
    url: str
    folders: list[Folder] = field(default_factory=list)
    pages: list[PageInfo] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.pages) + sum(folder.count for folder in self.folders)


def build_tree(team_id: int, pages: list[PageInfo], prefix: str = "") -> Folder:
    """The folders and pages under ``prefix`` ("" for the whole wiki) as a tree."""
    root = Folder(prefix.rstrip("/").rsplit("/", 1)[-1] or "Wiki", prefix,
                  page_url(team_id, prefix) if prefix else reverse(
                      "wiki:tree", kwargs={"team_id": team_id}))
    index: dict[str, Folder] = {prefix: root}
    for info in pages:
        rest = info.path[len(prefix):].split("/")
        parent = root
        for depth, name in enumerate(rest[:-1]):
            key = prefix + "/".join(rest[:depth + 1]) + "/"
            if key not in index:
                index[key] = Folder(name, key, page_url(team_id, key))
                parent.folders.append(index[key])
            parent = index[key]
        parent.pages.append(info)
    for folder in index.values():
        folder.folders.sort(key=lambda f: f.name.casefold())
        folder.pages.sort(key=lambda p: p.title.casefold())
    return root


def wiki_urls(team_id: int, path: str) -> dict[str, Any]:
    """The URLs a wiki template links to: the wiki's own, and the actions on ``path`` (a page
    or an attachment; none for "" or a folder)."""
    urls: dict[str, Any] = {
        "tree": reverse("wiki:tree", kwargs={"team_id": team_id}),
        "search": reverse("wiki:search", kwargs={"team_id": team_id}),
        "preview": reverse("wiki:preview", kwargs={"team_id": team_id}),
        "socket": f"/ws/teams/{team_id}/wiki/",
    }
    if path and not path.endswith("/"):
        kwargs = {"team_id": team_id, "path": path}
        urls |= {name: reverse(f"wiki:{name}", kwargs=kwargs)
                 for name in ("edit", "history", "diff", "restore", "rename", "delete")}
        urls["page"] = page_url(team_id, path)
    return urls
