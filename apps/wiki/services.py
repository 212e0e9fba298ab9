"""The one place that writes a team's wiki (issue 9; DESIGN 3.7): pages, attachments, renames,
deletes and restores, by a person (REST, the browser) or by the agent for one (its tools).

Every writer is checked against the database first: ``not_found("wiki")`` for someone outside
the team (exactly like an unknown team), ``forbidden`` for a viewer, and for deletes for anyone
below admin. The commit's author is ``person_author(by)`` unless the caller passes another
Author read from the database (the agent's tools pass ``agent_author(...)``); never a name from
a request body. Store refusals come out as ApplicationError (:mod:`apps.wiki.errors`): a
conflict as :class:`~apps.wiki.errors.WikiConflictError` with the current page and the merged
text.

After each commit the team's wiki group (``apps.realtime.groups.wiki_group``) gets
:class:`WikiChanged`. There is no database transaction around git, so it is published as soon
as the store returns, not on a transaction's commit.

Every function is synchronous and blocks on git: async callers use ``database_sync_to_async``
(whose thread hands the event back to the server's own loop, as the in-memory channel layer
needs).
"""

from __future__ import annotations

import logging
from typing import Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils.translation import gettext as _

from apps.accounts.models import Membership, Team, User
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.wiki import Author, WriteResult
from apps.realtime.groups import wiki_group
from apps.wiki.authors import person_author
from apps.wiki.errors import store_errors
from apps.wiki.selectors import awiki_membership, wiki_membership
from apps.wiki.stores import store_for

__all__ = [
    "WikiAction",
    "WikiChanged",
    "attachment_save",
    "awiki_membership",
    "page_delete",
    "page_edit",
    "page_rename",
    "page_restore",
    "page_save",
    "wiki_membership",
]

logger = logging.getLogger(__name__)

WikiAction = Literal["write", "edit", "rename", "delete", "restore"]

WikiChanged = TypedDict("WikiChanged", {
    "type": Literal["wiki.changed"],
    "path": str,  # the page's path after the change (the new one for a rename)
    "commit": str,  # the new commit on main
    "author": str,  # the commit author's display name ("Alice", "agent (for Alice)")
    "action": WikiAction,
    "from": str | None,  # the old path of a rename, else None
})
"""The channel-layer message a commit sends to ``wiki_group(team.pk)`` (handler
``wiki_changed``)."""


def page_save(*, team: Team, by: User, path: str, content: str | bytes,
              expected_blob: str | None, message: str,
              author: Author | None = None) -> WriteResult:
    """Create or replace the page ``path`` (``str`` content; ``bytes`` for an attachment under
    ``_files/``, see :func:`attachment_save`).

    ``expected_blob``: None means create-only (``conflict`` when the page exists), else the blob
    the writer read; a change made since is merged three ways (``merged=True``) or refused with
    ``conflict``. ``message``: the commit message ("" for a default). Raises ``not_found``,
    ``forbidden`` (viewers), ``invalid``, ``too_large``, ``conflict``, ``unavailable``.
    """
    author = _writer(by, team, author)
    default = f"Update {path}" if expected_blob else f"Create {path}"
    with store_errors():
        result = store_for(team).write(path, content, expected_blob=expected_blob,
                                       message=message or default, author=author)
    _published(team, result, author, "write")
    return result


def attachment_save(*, team: Team, by: User, path: str, content: bytes,
                    expected_blob: str | None, message: str,
                    author: Author | None = None) -> WriteResult:
    """Upload the file ``path`` (``_files/<name>.<allowed extension>``): :func:`page_save`
    with bytes, under the attachment size limit."""
    if not isinstance(content, bytes):
        raise ApplicationError(ErrorCode.INVALID, _("An attachment's content is bytes."))
    return page_save(team=team, by=by, path=path, content=content,
                     expected_blob=expected_blob, message=message, author=author)


def page_edit(*, team: Team, by: User, path: str, old: str, new: str,
              replace_all: bool = False, message: str,
              author: Author | None = None) -> WriteResult:
    """Replace the exact text ``old`` by ``new`` in the page as it is on ``main`` when the
    commit is made (``old`` must occur once unless ``replace_all``). Raises ``not_found``,
    ``forbidden``, ``invalid`` (``old`` missing or ambiguous), ``too_large``, ``unavailable``."""
    author = _writer(by, team, author)
    with store_errors():
        result = store_for(team).edit(path, old, new, replace_all=replace_all,
                                      message=message or f"Edit {path}", author=author)
    _published(team, result, author, "edit")
    return result


def page_rename(*, team: Team, by: User, path: str, to: str, expected_blob: str,
                message: str, author: Author | None = None) -> WriteResult:
    """Move ``path`` to ``to`` in one commit (history follows it); the result's ``path`` is
    ``to``. ``conflict`` when the page changed since ``expected_blob`` or ``to`` exists (in any
    letter case); ``not_found``, ``forbidden``, ``invalid``."""
    author = _writer(by, team, author)
    with store_errors():
        result = store_for(team).rename(path, to, expected_blob=expected_blob,
                                        message=message or f"Rename {path} to {to}",
                                        author=author)
    _published(team, result, author, "rename", moved_from=path)
    return result


def page_delete(*, team: Team, by: User, path: str, expected_blob: str, message: str,
                author: Author | None = None) -> WriteResult:
    """Remove ``path`` in a new commit (its history stays; :func:`page_restore` brings it back).
    Owners and admins only (``forbidden`` for members and viewers); ``conflict`` when it changed
    since ``expected_blob``; ``not_found`` when it is not there."""
    author = _writer(by, team, author, manage=True)
    with store_errors():
        result = store_for(team).delete(path, expected_blob=expected_blob,
                                        message=message or f"Delete {path}", author=author)
    _published(team, result, author, "delete")
    return result


def page_restore(*, team: Team, by: User, path: str, rev: str, message: str,
                 author: Author | None = None) -> WriteResult:
    """Make ``path`` what it was at ``rev`` (40-hex commit id) again, in a new commit; also
    recreates a deleted page. ``not_found`` when it did not exist at ``rev`` (or ``rev`` is
    not a revision); ``forbidden``, ``invalid``, ``too_large``."""
    author = _writer(by, team, author)
    with store_errors():
        result = store_for(team).restore(path, rev,
                                         message=message or f"Restore {path} from {rev[:12]}",
                                         author=author)
    _published(team, result, author, "restore")
    return result


def _writer(by: User, team: Team, author: Author | None, *, manage: bool = False) -> Author:
    """The commit's author once ``by`` may change ``team``'s wiki (delete: ``manage``)."""
    membership: Membership = wiki_membership(user=by, team_id=team.pk)
    role = membership.role_enum
    if not role.can_write:
        raise ApplicationError(
            ErrorCode.FORBIDDEN, _("Viewers can read the wiki but not change it."))
    if manage and not role.can_manage:
        raise ApplicationError(ErrorCode.FORBIDDEN, _("Only owners and admins delete wiki pages."))
    return author or person_author(by)


def _published(team: Team, result: WriteResult, author: Author, action: WikiAction, *,
               moved_from: str | None = None) -> None:
    """Tell the team's open wiki pages about the commit (a failure is logged: it is done);
    a change that made no commit is not news."""
    if not result.changed:
        return
    event: WikiChanged = {"type": "wiki.changed", "path": result.path, "commit": result.commit,
                          "author": author.name, "action": action, "from": moved_from}
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(wiki_group(team.pk), dict(event))
    except Exception:  # the commit stands; editors see it on their next read
        logger.exception("could not publish wiki.changed for team %s", team.pk)
