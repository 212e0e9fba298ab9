"""The wiki socket: ``/ws/teams/<team id>/wiki/?path=<page path>`` (issue 11, Live).

A page or editor opens it to hear, at once, that someone saved, renamed or deleted a page of
the team's wiki: the services publish ``wiki.changed`` to ``wiki_group(team_id)`` after each
commit, and this consumer forwards it as ``{"type": "wiki_changed", "path", "commit",
"author", "action", "from"}``. With ``?path=`` it first sends ``{"type": "wiki_page", "path",
"blob", "commit", "author"}``: the page as it is now (``blob`` null when it does not exist), so
a page that (re)connects notices a change it missed while it was away.

The rules of the conversation socket (DESIGN 3.4, 4): accept, then close 4401 when not signed
in (or a cookie session from a foreign Origin) and 4404 for anyone who is not a member of the
team — exactly the answer for a team that does not exist. The credentials and the membership
are checked again before every event is forwarded; a member who is removed has the socket
closed with 4404 (the ``member.changed`` message on their user group), a person whose
credentials end (a password change, signing out...) with 4401 (``credentials.changed``). The
socket sends; it reads no frames.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils.translation import gettext as _

from apps.accounts.auth import credentials_hold
from apps.accounts.models import Team
from apps.accounts.selectors import amembership_of
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.wiki import WikiError, is_page
from apps.realtime.groups import user_group, wiki_group
from apps.realtime.sockets import CLOSE_NOT_AUTHENTICATED, CLOSE_NOT_FOUND, origin_allowed
from apps.wiki.stores import store_for

__all__ = ["CLOSE_NOT_AUTHENTICATED", "CLOSE_NOT_FOUND", "WikiConsumer"]

_FORWARDED = ("path", "commit", "author", "action", "from")


class WikiConsumer(AsyncJsonWebsocketConsumer):
    """One open page (or editor, or tree) of one team's wiki."""

    team_id: int
    user_id: int
    joined: bool = False

    async def connect(self) -> None:
        await self.accept()  # accept first: only then can we close with our own codes
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not origin_allowed(self.scope):
            await self.close(code=CLOSE_NOT_AUTHENTICATED)
            return
        team_id = int(self.scope["url_route"]["kwargs"]["team_id"])
        membership = await amembership_of(user, team_id)
        if membership is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.team_id, self.user_id = team_id, user.pk
        await self.channel_layer.group_add(wiki_group(team_id), self.channel_name)
        await self.channel_layer.group_add(user_group(user.pk), self.channel_name)
        self.joined = True
        # Credentials that changed between the handshake's sign-in and the join above were
        # announced before this socket could hear it: look once more, now that it would.
        if not await credentials_hold(self.scope):
            await self.close(code=CLOSE_NOT_AUTHENTICATED)
            return
        path = self._path()
        if path:
            await self.send_json(await asyncio.to_thread(_page_now, membership.team, path))

    async def disconnect(self, code: int) -> None:
        if not self.joined:
            return
        await self.channel_layer.group_discard(wiki_group(self.team_id), self.channel_name)
        await self.channel_layer.group_discard(user_group(self.user_id), self.channel_name)

    def _path(self) -> str:
        query = parse_qs(self.scope.get("query_string", b"").decode("utf-8", "replace"))
        values = query.get("path")
        return values[0] if values else ""

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None
                      ) -> None:
        if self.joined:
            await self.send_json(ApplicationError(ErrorCode.BAD_FRAME, _(
                "The wiki socket only sends; it reads no frames.")).as_frame())

    # -- from the channel layer ---------------------------------------------------------------
    async def wiki_changed(self, message: dict[str, Any]) -> None:
        if not self.joined:
            return
        if not await credentials_hold(self.scope):  # e.g. the password changed since connecting
            await self.close(code=CLOSE_NOT_AUTHENTICATED)
            return
        membership = await amembership_of(self.scope["user"], self.team_id)
        if membership is None:  # removed from the team since connecting
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send_json({"type": "wiki_changed",
                              **{key: message.get(key) for key in _FORWARDED}})

    async def member_changed(self, message: dict[str, Any]) -> None:
        """The person's membership changed: close the socket if it is gone."""
        if message["team_id"] == self.team_id and message.get("role") is None:
            await self.close(code=CLOSE_NOT_FOUND)

    async def credentials_changed(self, message: dict[str, Any]) -> None:
        """The person's credentials changed: close if this socket's no longer sign it in."""
        if not await credentials_hold(self.scope, ended_session=message["ended_session"]):
            await self.close(code=CLOSE_NOT_AUTHENTICATED)

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        return json.dumps(content, ensure_ascii=False)


def _page_now(team: Team, path: str) -> dict[str, Any]:
    """The ``wiki_page`` frame: ``path`` at HEAD and who changed it last (blob None when there
    is no such page, or the path is none the rules allow)."""
    frame: dict[str, Any] = {"type": "wiki_page", "path": path, "blob": None, "commit": None,
                             "author": None}
    if not is_page(path):
        return frame
    store = store_for(team)
    try:
        page = store.read(path)
        history = store.history(path, limit=1)
    except WikiError:
        return frame
    frame.update(blob=page.blob, commit=history[0].commit.commit if history else page.commit,
                 author=history[0].commit.author_name if history else None)
    return frame
