"""The room pages (issue 5): the room list, a room's conversations and the room itself.

Isolation first: charlie (Globex) gets Django's 404 for every Acme room URL, exactly as for an
id that does not exist. The room page is a shell the conversation socket fills in: a viewer's has
no composer and no Stop button, and no page has inline code the CSP would block.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import unescape as html_unescape

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Membership, Role, Team, User
from apps.rooms.models import Conversation, Room, Run, RunStatus
from tests.integration.web.html import assert_no_inline_code, without_csrf

MISSING = 987654


@pytest.fixture
def room(acme: Team, alice: User) -> Room:
    return Room.objects.create(team=acme, name="General", created_by=alice)


@pytest.fixture
def conversation(room: Room, alice: User) -> Conversation:
    return Conversation.objects.create(room=room, title="Planning", created_by=alice)


@pytest.fixture
def globex_room(globex: Team, charlie: User) -> Room:
    return Room.objects.create(team=globex, name="Globex lobby", created_by=charlie)


def _urls(room_id: int, conversation_id: int) -> list[tuple[str, str]]:
    return [
        ("get", reverse("rooms:room_detail", args=[room_id])),
        ("get", reverse("rooms:conversation", args=[conversation_id])),
        ("post", reverse("rooms:conversation_new", args=[room_id])),
    ]


# -- isolation ------------------------------------------------------------------------------


def test_charlie_gets_404_on_every_acme_room_url_exactly_like_a_missing_one(
        signed_in: Callable[[User], Client], charlie: User, globex: Team, room: Room,
        conversation: Conversation) -> None:
    client = signed_in(charlie)
    theirs = _urls(room.pk, conversation.pk)
    missing = _urls(MISSING, MISSING)
    for (method, url), (_, missing_url) in zip(theirs, missing, strict=True):
        foreign = getattr(client, method)(url, {"title": "x"} if method == "post" else None)
        absent = getattr(client, method)(missing_url, {"title": "x"} if method == "post" else None)
        assert foreign.status_code == absent.status_code == 404, (url, foreign.status_code)
        assert without_csrf(foreign.content) == without_csrf(absent.content), url
    assert Conversation.objects.filter(room=room).count() == 1  # charlie created nothing


def test_charlie_cannot_create_a_room_in_acme(signed_in: Callable[[User], Client],
                                              charlie: User, globex: Team, acme: Team) -> None:
    response = signed_in(charlie).post(reverse("rooms:room_new"),
                                       {"team_id": acme.pk, "name": "Intruders"})
    assert response.status_code == 404
    assert not Room.objects.filter(name="Intruders").exists()


def test_the_room_list_shows_only_the_current_teams_rooms(
        signed_in: Callable[[User], Client], charlie: User, room: Room,
        conversation: Conversation, globex_room: Room) -> None:
    page = signed_in(charlie).get(reverse("rooms:room_list")).content.decode()
    assert "Globex lobby" in page
    assert "General" not in page and "Planning" not in page


def test_signed_out_visitors_are_sent_to_log_in(client: Client, room: Room,
                                                conversation: Conversation) -> None:
    for url in (reverse("rooms:room_list"), reverse("rooms:room_detail", args=[room.pk]),
                reverse("rooms:conversation", args=[conversation.pk])):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("accounts:login"))


# -- the room list and a room ------------------------------------------------------------------


def test_the_room_list_shows_rooms_with_their_conversations_and_create_forms(
        signed_in: Callable[[User], Client], bob: User, room: Room,
        conversation: Conversation) -> None:
    response = signed_in(bob).get(reverse("rooms:room_list"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "General" in page
    assert reverse("rooms:conversation", args=[conversation.pk]) in page
    assert reverse("rooms:conversation_new", args=[room.pk]) in page  # "New conversation"
    assert reverse("rooms:room_new") in page  # the create-room form
    assert_no_inline_code(response)


def test_the_room_list_follows_the_team_chosen_in_the_session(
        signed_in: Callable[[User], Client], alice: User, room: Room, globex: Team,
        globex_room: Room) -> None:
    Membership.objects.create(team=globex, user=alice, role=Role.MEMBER)
    client = signed_in(alice)
    session = client.session
    session["team_id"] = globex.pk
    session.save()
    page = client.get(reverse("rooms:room_list")).content.decode()
    assert "Globex lobby" in page and "General" not in page


def test_a_viewer_sees_rooms_but_no_create_forms(signed_in: Callable[[User], Client],
                                                 carol: User, room: Room,
                                                 conversation: Conversation) -> None:
    client = signed_in(carol)
    listing = client.get(reverse("rooms:room_list")).content.decode()
    assert "General" in listing and "Planning" in listing
    assert reverse("rooms:room_new") not in listing
    assert reverse("rooms:conversation_new", args=[room.pk]) not in listing
    detail = client.get(reverse("rooms:room_detail", args=[room.pk])).content.decode()
    assert "Planning" in detail
    assert reverse("rooms:conversation_new", args=[room.pk]) not in detail


def test_a_member_creates_a_room_and_lands_in_it(signed_in: Callable[[User], Client], bob: User,
                                                 acme: Team) -> None:
    response = signed_in(bob).post(reverse("rooms:room_new"),
                                   {"team_id": acme.pk, "name": "  Research  "})
    created = Room.objects.get(team=acme, name="Research")
    assert created.created_by == bob
    assert response.status_code == 302
    assert response["Location"] == reverse("rooms:room_detail", args=[created.pk])


def test_a_member_starts_a_conversation_and_lands_in_the_room_page(
        signed_in: Callable[[User], Client], bob: User, room: Room) -> None:
    response = signed_in(bob).post(reverse("rooms:conversation_new", args=[room.pk]), {})
    created = Conversation.objects.get(room=room, created_by=bob)
    assert created.title == "New conversation"
    assert response["Location"] == reverse("rooms:conversation", args=[created.pk])


def test_a_viewer_cannot_create_rooms_or_conversations(
        signed_in: Callable[[User], Client], carol: User, acme: Team, room: Room) -> None:
    client = signed_in(carol)
    assert client.post(reverse("rooms:room_new"),
                       {"team_id": acme.pk, "name": "Mine"}).status_code == 403
    assert client.post(reverse("rooms:conversation_new", args=[room.pk]),
                       {"title": "Mine"}).status_code == 403
    assert not Room.objects.filter(name="Mine").exists()
    assert not Conversation.objects.filter(title="Mine").exists()


def test_a_blank_room_name_is_refused_with_a_message(signed_in: Callable[[User], Client],
                                                     bob: User, acme: Team) -> None:
    response = signed_in(bob).post(reverse("rooms:room_new"), {"team_id": acme.pk, "name": " "},
                                   follow=True)
    assert response.status_code == 200
    assert not Room.objects.filter(team=acme).exists()
    assert list(response.context["messages"])


# -- the room page ------------------------------------------------------------------------------


def test_the_room_page_is_a_shell_with_the_dom_contract_for_a_member(
        signed_in: Callable[[User], Client], bob: User, conversation: Conversation) -> None:
    response = signed_in(bob).get(reverse("rooms:conversation", args=[conversation.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    for hook in ('id="room"', 'id="transcript"', 'id="run-status"', 'id="presence"',
                 'id="typing"', 'id="connection"', 'id="usage"', 'id="notices"',
                 '<form id="composer"', 'name="text"', 'data-action="send"',
                 'data-action="stop"'):
        assert hook in page, hook
    assert f'data-socket-path="/ws/conversations/{conversation.pk}/"' in page
    assert 'data-role="member"' in page
    assert f'href="/api/conversations/{conversation.pk}/export.json"' in page
    assert f'href="/api/conversations/{conversation.pk}/export.md"' in page
    assert 'type="module"' in page and "rooms/room.js" in page
    assert_no_inline_code(response)


def test_a_viewers_room_page_has_no_composer_and_no_stop(
        signed_in: Callable[[User], Client], carol: User, conversation: Conversation) -> None:
    response = signed_in(carol).get(reverse("rooms:conversation", args=[conversation.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="transcript"' in page
    assert 'id="composer"' not in page
    assert 'data-action="send"' not in page
    assert 'data-action="stop"' not in page
    assert 'data-role="viewer"' in page
    assert_no_inline_code(response)


def test_the_room_page_says_how_the_last_run_ended(
        signed_in: Callable[[User], Client], alice: User, bob: User,
        conversation: Conversation) -> None:
    Run.objects.create(conversation=conversation, status=RunStatus.CANCELLED, started_by=alice,
                       stopped_by=bob)
    page = signed_in(alice).get(reverse("rooms:conversation", args=[conversation.pk]))
    html = page.content.decode()
    assert 'data-last-status="cancelled"' in html
    assert 'data-last-stopped-by="Bob"' in html
    assert "Stopped by Bob</span>" in html


def test_names_and_titles_are_escaped(signed_in: Callable[[User], Client], alice: User,
                                      acme: Team) -> None:
    alice.display_name = '<img src=x onerror="alert(1)">'
    alice.save()
    room = Room.objects.create(team=acme, name="<script>alert(1)</script>")
    conversation = Conversation.objects.create(room=room, title='"><script>alert(2)</script>')
    client = signed_in(alice)
    for url in (reverse("rooms:room_list"), reverse("rooms:room_detail", args=[room.pk]),
                reverse("rooms:conversation", args=[conversation.pk])):
        response = client.get(url)
        assert b"<script>alert" not in response.content, url
        assert b"<img src=x" not in response.content, url
        assert_no_inline_code(response)


def test_the_room_pages_take_only_their_methods(signed_in: Callable[[User], Client], bob: User,
                                                room: Room, conversation: Conversation) -> None:
    client = signed_in(bob)
    assert client.post(reverse("rooms:conversation", args=[conversation.pk])).status_code == 405
    assert client.get(reverse("rooms:conversation_new", args=[room.pk])).status_code == 405
    assert client.get(reverse("rooms:room_new")).status_code == 405


def test_the_composer_completes_the_agent_and_this_teams_people_only(
        signed_in: Callable[[User], Client], acme: Team, alice: User, charlie: User,
        conversation: Conversation) -> None:
    Team.objects.filter(pk=acme.pk).update(agent_handle="robo")
    page = signed_in(alice).get(reverse("rooms:conversation", args=[conversation.pk]))
    html = page.content.decode()
    raw = re.search(r'data-mention-names="([^"]*)"', html).group(1)
    names = json.loads(html_unescape(raw))
    assert names[:2] == [{"name": "robo", "kind": "agent"}, {"name": "agent", "kind": "agent"}]
    people = {n["name"] for n in names if n["kind"] == "person"}
    assert people == {"Alice", "Bob", "Carol"} and charlie.shown_name not in people
    assert 'data-agent-mode="always"' in html
