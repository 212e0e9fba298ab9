"""The room pages: the team's rooms, one room's conversations, and the room itself.

Thin: every read goes through ``apps.rooms.selectors`` (team-scoped), every write through
``apps.rooms.services.rooms``. Another team's room or conversation answers with Django's 404,
exactly like a missing one (DESIGN 3.1). The current team is the session's
(``apps.accounts.current``). The room page is a server-rendered shell; its transcript arrives
over the conversation socket (docs/protocol.md) and ``static/rooms/room.js`` renders it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from apps.accounts.current import current_membership
from apps.accounts.models import Team, User
from apps.accounts.selectors import membership_of, team_members
from apps.common.errors import ApplicationError, ErrorCode
from apps.common.web import refusal
from apps.integrations.mcp_selectors import team_mcp_servers
from apps.rooms import selectors
from apps.rooms.forms import ConversationCreateForm, RoomCreateForm
from apps.rooms.mentions import AGENT_HANDLE
from apps.rooms.models import Conversation, Message, Run, RunStatus
from apps.rooms.services.limits import message_max_chars
from apps.rooms.services.rooms import conversation_create, room_create

__all__ = ["conversation", "conversation_new", "room_detail", "room_list", "room_new"]


def _found[T](lookup: Callable[[], T]) -> T:
    """``lookup()``, with the selectors' ``not_found`` as Django's 404."""
    try:
        return lookup()
    except ApplicationError as error:
        if error.code == ErrorCode.NOT_FOUND:
            raise Http404(error.message) from None
        raise


def _user(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required ran first
    return user


def _form_errors(request: HttpRequest, form: RoomCreateForm | ConversationCreateForm) -> None:
    for errors in form.errors.values():
        for error in errors:
            messages.error(request, error)


@login_required
@require_GET
def room_list(request: HttpRequest) -> HttpResponse:
    """The current team's rooms, each with its newest conversations."""
    membership = current_membership(request)
    rooms = (selectors.room_overview(user=_user(request), team_id=membership.team_id)
             if membership else [])
    return render(request, "rooms/room_list.html", {
        "membership": membership,
        "team": membership.team if membership else None,
        "can_write": bool(membership and membership.role_enum.can_write),
        "rooms": rooms,
    })


@login_required
@require_POST
def room_new(request: HttpRequest) -> HttpResponse:
    """Create a room in the posted team, then open it."""
    form = RoomCreateForm(request.POST)
    if not form.is_valid():
        _form_errors(request, form)
        return redirect("rooms:room_list")
    membership = membership_of(_user(request), form.cleaned_data["team_id"])
    if membership is None:
        raise Http404("No such team.")
    try:
        room = room_create(team=membership.team, name=form.cleaned_data["name"],
                           by=_user(request))
    except ApplicationError as error:
        refusal(request, error)  # 404 / 403, or a message for the list
        return redirect("rooms:room_list")
    return redirect("rooms:room_detail", room_id=room.pk)


@login_required
@require_GET
def room_detail(request: HttpRequest, room_id: int) -> HttpResponse:
    """One room and its conversations, newest first."""
    user = _user(request)
    room = _found(lambda: selectors.room_for(user, room_id))
    membership = membership_of(user, room.team_id)
    return render(request, "rooms/room_detail.html", {
        "room": room,
        "team": room.team,
        "can_write": bool(membership and membership.role_enum.can_write),
        "conversations": selectors.conversation_list(room=room),
    })


@login_required
@require_POST
def conversation_new(request: HttpRequest, room_id: int) -> HttpResponse:
    """Start a conversation in the room, then open it."""
    user = _user(request)
    room = _found(lambda: selectors.room_for(user, room_id))
    form = ConversationCreateForm(request.POST)
    if not form.is_valid():
        _form_errors(request, form)
        return redirect("rooms:room_detail", room_id=room.pk)
    try:
        created = conversation_create(room=room, title=form.cleaned_data["title"], by=user)
    except ApplicationError as error:
        refusal(request, error)  # 404 / 403, or a message for the room page
        return redirect("rooms:room_detail", room_id=room.pk)
    return redirect("rooms:conversation", conversation_id=created.pk)


def _ended_text(run: Run | None) -> str:
    """What #run-status says before the socket brings the state (room.js says the same)."""
    if run is None:
        return gettext("Idle")
    if run.status == RunStatus.CANCELLED:
        return (gettext("Stopped by %(name)s") % {"name": run.stopped_by.shown_name}
                if run.stopped_by else gettext("Stopped"))
    if run.status == RunStatus.COMPLETED:
        return gettext("Completed")
    if run.status == RunStatus.INTERRUPTED:
        return gettext("Interrupted — the worker stopped responding")
    return (gettext("Failed (%(kind)s)") % {"kind": run.error_kind} if run.error_kind
            else gettext("Failed"))


def _mention_names(team: Team) -> list[dict[str, str]]:
    """What the composer completes after ``@``: the agent (the team's handle, and ``agent``)
    first, then the team's people, by name (``[{"name", "kind": "agent" | "person"}]``)."""
    handles = dict.fromkeys([team.agent_handle, AGENT_HANDLE])  # in order, once each
    agent = [{"name": handle, "kind": "agent"} for handle in handles]
    people = [{"name": m.user.shown_name, "kind": "person"} for m in team_members(team)]
    return agent + people


def _fork_origin(conversation: Conversation) -> dict[str, object] | None:
    """For a fork, where it came from: ``{"title", "url"}`` of the conversation it was forked
    from, at the message (None when it is no fork, or that message is gone)."""
    point = (Message.objects.filter(pk=conversation.forked_from_id)
             .select_related("conversation").first() if conversation.forked_from_id else None)
    if point is None:
        return None
    page = reverse("rooms:conversation", args=[point.conversation_id])
    return {"title": point.conversation.title, "url": f"{page}#message-{point.pk}"}


@login_required
@require_GET
def conversation(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The room page: the shell the conversation socket fills in."""
    found, membership = _found(lambda: selectors.conversation_for(_user(request),
                                                                  conversation_id))
    last = selectors.last_run(found)
    ended = last if last is not None and not last.active else None
    return render(request, "rooms/conversation.html", {
        "last_run": ended,
        "run_status_text": _ended_text(ended),
        "conversation": found,
        "forked_from": _fork_origin(found),
        "room": found.room,
        "team": found.room.team,
        "membership": membership,
        "can_write": membership.role_enum.can_write,
        "message_max_chars": message_max_chars(),
        "image_max_bytes": settings.CONFAB["IMAGE_MAX_BYTES"],
        "images_per_message": settings.CONFAB["IMAGES_PER_MESSAGE"],
        "mention_names": json.dumps(_mention_names(found.room.team)),
        "mcp_servers": [s.name for s in team_mcp_servers(found.room.team)],
        "socket_path": f"/ws/conversations/{found.pk}/",
        "export_json": reverse("api:export_json", kwargs={"conversation_id": found.pk}),
        "export_md": reverse("api:export_markdown", kwargs={"conversation_id": found.pk}),
    })
