"""Rooms and conversations over REST: pagination, filters, what each write does, and errors."""

from __future__ import annotations

import json

import pytest

from apps.common.paging import OFFSET_MAX
from apps.rooms.models import Conversation, Room, Run, RunStatus
from tests.integration.api.streams import body as streamed_body

pytestmark = pytest.mark.django_db


def _json(client, method: str, path: str, body: dict | None = None):
    data = b"" if body is None else json.dumps(body)
    return client.generic(method, path, data=data, content_type="application/json")


def test_rooms_are_paginated_by_name(token_client, alice, acme):
    for name in ("delta", "alpha", "echo", "charlie", "bravo"):
        Room.objects.create(team=acme, name=name)
    client = token_client(alice)

    first = client.get("/api/rooms", {"limit": 2}).json()
    rest = client.get("/api/rooms", {"limit": 2, "offset": 2}).json()
    last = client.get("/api/rooms", {"limit": 2, "offset": 4}).json()

    assert first["count"] == rest["count"] == last["count"] == 5
    names = [room["name"] for page in (first, rest, last) for room in page["items"]]
    assert names == ["alpha", "bravo", "charlie", "delta", "echo"]
    assert first["items"][0]["team"] == {"id": acme.pk, "name": "Acme"}


def test_a_page_larger_than_the_limit_is_refused(token_client, alice, acme):
    response = token_client(alice).get("/api/rooms", {"limit": 201})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert "limit" in response.json()["message"]


@pytest.mark.parametrize("path", ["/api/rooms", "/api/rooms/{room}/conversations",
                                  "/api/search?q=a"])
def test_an_offset_past_the_bound_is_invalid_not_a_server_error(token_client, alice, room,
                                                                path):
    """A huge ``offset`` was SQLite's "datatype mismatch", a 500 (issue 19 review)."""
    client = token_client(alice)
    url = path.format(room=room.pk) + ("&" if "?" in path else "?")
    assert client.get(f"{url}offset={OFFSET_MAX}").status_code == 200  # an empty page
    for offset in (OFFSET_MAX + 1, 99999999999999999999):
        response = client.get(f"{url}offset={offset}")
        assert response.status_code == 400, response.content
        assert response.json() == {"code": "invalid", "message": (
            f"query.offset: Input should be less than or equal to {OFFSET_MAX}")}


def test_the_search_page_shows_its_furthest_page_for_a_huge_offset(client, alice, room):
    Conversation.objects.create(room=room, title="apples")
    client.force_login(alice)
    page = client.get("/search/", {"q": "a", "offset": "99999999999999999999"})
    assert page.status_code == 200
    assert (page.context["offset"], page.context["count"], page.context["hits"]) == (
        OFFSET_MAX, 1, [])


def test_a_server_bug_under_api_answers_json(token_client, alice, monkeypatch, caplog):
    """An exception no handler knows (a bug) is a 500 in the API's error shape, not Django's
    HTML page, and is logged with its traceback as Django logs a 500."""
    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("apps.api.rooms.room_list", broken)
    response = token_client(alice).get("/api/rooms")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"code": "internal", "message": (
        "Something went wrong on the server. It has been logged; try again later.")}
    logged = [r for r in caplog.records if r.name == "django.request"]
    assert len(logged) == 1 and logged[0].exc_info[1].args == ("a bug",)


def test_lists_show_only_your_teams_rooms(token_client, charlie, globex, room):
    Room.objects.create(team=globex, name="Globex room")
    page = token_client(charlie).get("/api/rooms").json()
    assert [r["name"] for r in page["items"]] == ["Globex room"]
    assert page["count"] == 1
    other = token_client(charlie).get("/api/rooms", {"team_id": room.team_id}).json()
    assert other == {"items": [], "count": 0}


def test_archived_rooms_and_conversations_leave_the_default_lists(token_client, bob, room,
                                                                   conversation):
    client = token_client(bob)
    archived = client.post(f"/api/conversations/{conversation.pk}/archive").json()
    assert archived["archived"]
    assert archived == client.get(f"/api/conversations/{conversation.pk}").json()  # as stored
    assert client.post(f"/api/rooms/{room.pk}/archive").json()["archived"]

    assert client.get("/api/rooms").json()["count"] == 0
    assert [r["id"] for r in client.get("/api/rooms", {"archived": True}).json()["items"]] == [
        room.pk]
    conversations = f"/api/rooms/{room.pk}/conversations"
    assert client.get(conversations).json()["count"] == 0
    assert client.get(conversations, {"archived": True}).json()["items"][0]["id"] == (
        conversation.pk)


def test_conversations_are_listed_newest_first(token_client, alice, room, conversation):
    client = token_client(alice)
    created = _json(client, "POST", f"/api/rooms/{room.pk}/conversations", {"title": "Later"})
    assert created.status_code == 201
    body = created.json()
    assert body["created_by"] == {"id": alice.pk, "name": "Alice"}
    assert (body["room"], body["team_id"], body["last_seq"]) == (
        {"id": room.pk, "name": "General"}, room.team_id, 0)

    page = client.get(f"/api/rooms/{room.pk}/conversations", {"limit": 1}).json()
    assert page["count"] == 2
    assert [c["title"] for c in page["items"]] == ["Later"]


def test_renames_are_stored_and_blank_names_refused(token_client, bob, room, conversation):
    client = token_client(bob)
    assert _json(client, "PATCH", f"/api/rooms/{room.pk}", {"name": " Ops "}).json()[
        "name"] == "Ops"
    renamed = _json(client, "PATCH", f"/api/conversations/{conversation.pk}",
                    {"title": "Roadmap"}).json()
    assert renamed["title"] == "Roadmap"
    # as stored: its title_changed moved last_seq, the rename updated_at
    assert renamed == client.get(f"/api/conversations/{conversation.pk}").json()
    room.refresh_from_db()
    conversation.refresh_from_db()
    assert (room.name, conversation.title) == ("Ops", "Roadmap")

    for body in ({"name": ""}, {"name": "   "}, {"name": "x" * 101}, {}):
        response = _json(client, "PATCH", f"/api/rooms/{room.pk}", body)
        assert (response.status_code, response.json()["code"]) == (400, "invalid"), body


@pytest.mark.parametrize(("title", "stored"), [
    (" " + "W" * 200 + " ", "W" * 200),  # 1-200 characters once trimmed
    ("Line one\nline two\t\u3000end", "Line one line two end"),  # one line
    ("Budget\x07 2027", "Budget 2027"),  # control characters dropped
    ("\u200bRoadmap", "\u200bRoadmap"),  # an invisible character beside visible ones
    ("👩\u200d💻 team", "👩\u200d💻 team"),  # a joined emoji keeps its joiner
])
def test_a_title_is_one_trimmed_line(token_client, bob, room, conversation, title, stored):
    client = token_client(bob)
    renamed = _json(client, "PATCH", f"/api/conversations/{conversation.pk}", {"title": title})
    assert (renamed.status_code, renamed.json()["title"]) == (200, stored)
    created = _json(client, "POST", f"/api/rooms/{room.pk}/conversations", {"title": title})
    assert (created.status_code, created.json()["title"]) == (201, stored)


@pytest.mark.parametrize(("title", "why"), [
    ("\u200b", "The title cannot be empty."),  # shows as an empty sidebar row
    ("\u200b\u200c\ufeff \n\u3164\u2800", "The title cannot be empty."),
    ("\n\t", "The title cannot be empty."),
    ("W" * 201, "The title is longer than 200 characters."),
    ("W" * 100 + "\n\n" + "W" * 100, "The title is longer than 200 characters."),
])
def test_a_title_with_nothing_to_show_or_too_long_is_invalid(
        token_client, bob, room, conversation, title, why):
    client = token_client(bob)
    for response in (
            _json(client, "PATCH", f"/api/conversations/{conversation.pk}", {"title": title}),
            _json(client, "POST", f"/api/rooms/{room.pk}/conversations", {"title": title})):
        assert response.status_code == 400
        assert response.json() == {"code": "invalid", "message": why}
    assert list(Conversation.objects.values_list("title", flat=True)) == ["Plans"]


def test_a_room_name_follows_the_same_rules(token_client, bob, acme, room):
    client = token_client(bob)
    named = _json(client, "PATCH", f"/api/rooms/{room.pk}", {"name": " Ops\nweekly "})
    assert named.json()["name"] == "Ops weekly"
    blank = _json(client, "POST", "/api/rooms", {"team_id": acme.pk, "name": "\u200b"})
    assert blank.json() == {"code": "invalid", "message": "The room name cannot be empty."}
    assert _json(client, "POST", "/api/rooms",
                 {"team_id": acme.pk, "name": " " + "R" * 100 + " "}).status_code == 201


def test_no_conversation_starts_in_an_archived_room(token_client, bob, room):
    client = token_client(bob)
    client.post(f"/api/rooms/{room.pk}/archive")
    response = _json(client, "POST", f"/api/rooms/{room.pk}/conversations", {"title": "x"})
    assert (response.status_code, response.json()["code"]) == (409, "conflict")


def test_creator_and_managers_may_delete_a_conversation(token_client, alice, bob, room):
    mine = Conversation.objects.create(room=room, title="Bob's", created_by=bob)
    hers = Conversation.objects.create(room=room, title="Alice's", created_by=alice)
    assert token_client(bob).delete(f"/api/conversations/{mine.pk}").status_code == 204
    assert token_client(bob).delete(f"/api/conversations/{hers.pk}").status_code == 403
    assert token_client(alice).delete(f"/api/conversations/{hers.pk}").status_code == 204
    assert not Conversation.objects.exists()


def test_a_conversation_with_an_active_run_is_not_deleted(token_client, alice, conversation):
    Run.objects.create(conversation=conversation, status=RunStatus.RUNNING, started_by=alice)
    response = token_client(alice).delete(f"/api/conversations/{conversation.pk}")
    assert (response.status_code, response.json()["code"]) == (409, "conflict")
    assert Conversation.objects.filter(pk=conversation.pk).exists()


def test_get_a_conversation(token_client, carol, conversation):
    body = token_client(carol).get(f"/api/conversations/{conversation.pk}").json()
    assert (body["id"], body["title"], body["archived"]) == (conversation.pk, "Plans", False)


def test_a_body_that_is_not_json_is_invalid(token_client, bob, room):
    response = token_client(bob).generic("PATCH", f"/api/rooms/{room.pk}", data=b"{nope",
                                         content_type="application/json")
    assert (response.status_code, response.json()["code"]) == (400, "invalid")


def test_a_conversation_is_created_in_a_mode_and_carries_it(token_client, bob, room):
    client = token_client(bob)
    path = f"/api/rooms/{room.pk}/conversations"
    default = _json(client, "POST", path, {"title": "plain"}).json()
    chat = _json(client, "POST", path, {"title": "chat", "agent_mode": "mention"}).json()
    assert (default["agent_mode"], chat["agent_mode"]) == ("always", "mention")
    assert client.get(f"/api/conversations/{chat['id']}").json()["agent_mode"] == "mention"
    export = client.get(f"/api/conversations/{chat['id']}/export.json")
    assert json.loads(streamed_body(export))["conversation"]["agent_mode"] == "mention"


def test_an_unknown_agent_mode_is_refused_and_nothing_is_created(token_client, bob, room):
    response = _json(token_client(bob), "POST", f"/api/rooms/{room.pk}/conversations",
                     {"title": "x", "agent_mode": "sometimes"})
    assert response.status_code in (400, 422) and "agent_mode" in response.content.decode()
    assert not Conversation.objects.filter(title="x").exists()


@pytest.mark.parametrize("team_id", [2**63, 10**20])  # past what a 64-bit id can hold
def test_a_team_id_no_row_can_hold_answers_like_a_missing_team(token_client, alice, acme,
                                                               team_id):
    client = token_client(alice)
    missing = 987654321  # a team that does not exist
    for url in ("/api/rooms?team_id={}", "/api/search?q=plans&team_id={}",
                "/api/teams/{}/wiki/pages"):
        got, expected = client.get(url.format(team_id)), client.get(url.format(missing))
        assert (got.status_code, got.json()) == (expected.status_code, expected.json()), url
    created = [_json(client, "POST", "/api/rooms", {"team_id": team, "name": "x"})
               for team in (team_id, missing)]
    assert [(r.status_code, r.json()) for r in created] == [
        (created[1].status_code, created[1].json())] * 2
