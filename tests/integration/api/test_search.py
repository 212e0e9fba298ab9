"""``GET /api/search?q=`` (issue 19): titles and what was said across the caller's teams, CJK
substrings found without word boundaries, only what the caller may see (another team's
conversations never appear), bounded and paged; bad queries refused in plain words."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from apps.accounts.models import Team, User
from apps.rooms.models import Conversation, Message, Room, Run, RunStatus
from apps.rooms.services.forks import conversation_fork
from apps.rooms.services.messages import message_post
from apps.rooms.services.versions import message_edit

pytestmark = pytest.mark.django_db


def said(conversation: Conversation, text: str, *, role: str = "assistant",
         position: int | None = None, **columns) -> Message:
    """A stored message of ``conversation`` (``save()`` writes its search text)."""
    last = conversation.messages.count()
    return Message.objects.create(conversation=conversation, role=role,
                                  position=position if position is not None else last + 1,
                                  content=[{"type": "text", "text": text}], **columns)


def found(client: Client, q: str, **params) -> dict:
    response = client.get("/api/search", {"q": q, **params})
    assert response.status_code == 200, response.content[:300]
    return response.json()


def test_titles_and_text_are_found_with_cjk_substrings_and_open_at_the_message(
        token_client: Callable[[User], Client], bob: User, room: Room,
        conversation: Conversation) -> None:
    cjk = Conversation.objects.create(room=room, title="办公室搬迁计划")
    answer = said(cjk, "我们下周把服务器搬到柏林的新机房，然后通知大家。")
    english = said(conversation, "The quarterly BUDGET is three million.")
    tool = Message.objects.create(conversation=conversation, role="assistant", position=9,
                                  content=[{"type": "tool_use", "id": "t1", "name": "Bash",
                                            "input": {"command": "echo 柏林"}}])
    client = token_client(bob)

    page = found(client, "柏林的新")  # the middle of a sentence written without spaces
    assert page["count"] == 1
    hit = page["items"][0]
    assert hit["message"]["id"] == answer.pk and hit["conversation"]["id"] == cjk.pk
    assert hit["conversation"]["room"] == {"id": room.pk, "name": "General"}
    assert hit["url"] == f"/conversations/{cjk.pk}/#message-{answer.pk}"
    start, end = hit["highlight"]
    assert hit["snippet"][start:end] == "柏林的新"

    title = found(client, "公室搬")["items"]
    assert [(h["conversation"]["id"], h["message"]) for h in title] == [(cjk.pk, None)]
    assert title[0]["url"] == f"/conversations/{cjk.pk}/"

    budget = found(client, "quarterly budget")["items"]  # ASCII case does not matter
    assert [h["message"]["id"] for h in budget] == [english.pk]
    assert budget[0]["snippet"][slice(*budget[0]["highlight"])] == "quarterly BUDGET"
    assert tool.pk not in {h["message"]["id"] for h in found(client, "柏林")["items"]
                           if h["message"]}  # a tool call's arguments are not what was said
    spaced = said(conversation, "keep  two spaces")
    assert [h["message"]["id"] for h in found(client, " keep  two ")["items"]] == [spaced.pk]


def test_another_teams_conversations_never_appear(
        token_client: Callable[[User], Client], alice: User, charlie: User, globex: Team,
        conversation: Conversation) -> None:
    theirs = Conversation.objects.create(
        room=Room.objects.create(team=globex, name="Globex"), title="Secret merger")
    said(theirs, "the secret merger with Acme closes Friday")
    said(conversation, "our own secret plan")

    alices = found(token_client(alice), "secret")
    assert [h["conversation"]["id"] for h in alices["items"]] == [conversation.pk]
    assert alices["count"] == 1
    assert found(token_client(alice), "merger") == {"items": [], "count": 0}
    assert found(token_client(alice), "secret", team_id=globex.pk) == {"items": [], "count": 0}
    charlies = found(token_client(charlie), "secret")
    assert {h["conversation"]["id"] for h in charlies["items"]} == {theirs.pk}


def test_archived_earlier_versions_and_compacted_text_are_left_out(
        token_client: Callable[[User], Client], alice: User, bob: User, room: Room,
        conversation: Conversation) -> None:
    kept = said(conversation, "the migration plan, current")
    said(conversation, "the migration plan, compacted away", compacted=True)
    archived = Conversation.objects.create(room=room, title="Old", archived=True)
    said(archived, "the migration plan, archived")
    hidden_room = Room.objects.create(team=room.team, name="Gone", archived=True)
    said(Conversation.objects.create(room=hidden_room, title="X"), "the migration plan, old room")

    asked = message_post(conversation=conversation, membership=bob.memberships.get(),
                         text="please write the migration plan", client_id="m1").message
    Run.objects.filter(conversation=conversation).update(status=RunStatus.COMPLETED)  # answered
    edited = message_edit(conversation=conversation, membership=bob.memberships.get(),
                          message_id=asked.pk, text="please write the rollout plan")
    page = found(token_client(alice), "migration plan")
    assert [h["message"]["id"] for h in page["items"]] == [kept.pk]  # the edit superseded bob's
    rollout = found(token_client(alice), "rollout plan")["items"]
    assert [h["message"]["id"] for h in rollout] == [edited.pk]


def test_a_fork_is_found_by_the_text_it_copied(
        token_client: Callable[[User], Client], alice: User, conversation: Conversation) -> None:
    point = said(conversation, "答案是四十二", status="complete")
    fork = conversation_fork(conversation=conversation, membership=alice.memberships.get(),
                             message_id=point.pk)
    hits = found(token_client(alice), "是四十")["items"]
    assert sorted(h["conversation"]["id"] for h in hits) == sorted([conversation.pk, fork.pk])


def test_pages_are_bounded_and_bad_queries_are_refused(
        token_client: Callable[[User], Client], bob: User, room: Room,
        conversation: Conversation) -> None:
    titled = Conversation.objects.create(room=room, title="Deploy notes")
    texts = [said(conversation, f"deploy step {n}") for n in range(5)]
    client = token_client(bob)
    everything = found(client, "deploy")
    assert everything["count"] == 6
    order = [(h["conversation"]["id"], h["message"] and h["message"]["id"])
             for h in everything["items"]]
    assert order == [(titled.pk, None), *[(conversation.pk, m.pk) for m in reversed(texts)]]
    pages = [found(client, "deploy", limit=2, offset=offset)["items"] for offset in (0, 2, 4)]
    assert [(h["conversation"]["id"], h["message"] and h["message"]["id"])
            for page in pages for h in page] == order

    for params, words in (({"q": "   "}, "at least one character"),
                          ({"q": "x" * 101}, "100"),
                          ({"q": "deploy", "limit": 201}, "limit"),
                          ({}, "q")):
        response = client.get("/api/search", params)
        assert response.status_code == 400, (params, response.content)
        assert response.json()["code"] == "invalid" and words in response.json()["message"]


def test_a_query_is_bounded_once_its_ends_are_stripped(
        token_client: Callable[[User], Client], bob: User, conversation: Conversation) -> None:
    """``q`` is 1-100 characters once stripped (docs/protocol.md): 100 characters with spaces
    around are a search, 101 are not, on the API and on the page alike."""
    said(conversation, "W" * 100)
    client = token_client(bob)
    assert found(client, " " + "W" * 100 + " ")["count"] == 1
    too_long = client.get("/api/search", {"q": " " + "W" * 101 + " "})
    assert (too_long.status_code, too_long.json()["code"]) == (400, "invalid")
    bob_page = Client()
    bob_page.force_login(bob)
    page = bob_page.get("/search/", {"q": "\t" + "W" * 100 + "\n"})
    assert page.status_code == 200 and page.context["count"] == 1
    nul = bob_page.get("/search/", {"q": "W\x00W"})
    assert (nul.status_code, nul.context["error"]) == (
        200, "Search text cannot hold a NUL character.")
