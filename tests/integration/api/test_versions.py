"""Fork at a message, edit your own last message, regenerate the last answer (issue 19): what
each stores, what it refuses, who may, and the earlier versions in both exports."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.rooms.models import (
    Conversation,
    ConversationEvent,
    Message,
    MessageStatus,
    Run,
    RunStatus,
)
from apps.rooms.transcript import history_of
from tests.integration.api.streams import body as streamed_body

pytestmark = pytest.mark.django_db

AN_HOUR_AGO = timezone.now() - timedelta(hours=1)


def _post(client, path: str, body: dict | None = None):
    return client.post(path, data=json.dumps(body or {}), content_type="application/json")


def _say(conversation, position: int, text: str, *, author=None, role: str = "user",
         **columns) -> Message:
    """A stored message of the history, written an hour ago (outside any rate limit)."""
    message = Message.objects.create(
        conversation=conversation, role=role, position=position, author=author,
        author_name=author.shown_name if author else "", client_id=f"c{position}",
        content=[{"type": "text", "text": text}], **columns)
    Message.objects.filter(pk=message.pk).update(created_at=AN_HOUR_AGO)
    return message


@pytest.fixture
def exchange(conversation, alice):
    """alice asked, the agent answered with a tool call and its result, then a text."""
    run = Run.objects.create(conversation=conversation, status=RunStatus.COMPLETED,
                             started_by=alice)
    return [_say(conversation, 1, "What is in notes.md?", author=alice, run=run),
            _say(conversation, 2, "Reading it.", role="assistant", run=run),
            _say(conversation, 3, "(the file)", role="tool", run=run),
            _say(conversation, 4, "It lists the plans.", role="assistant", run=run)]


def _texts(conversation) -> list[str]:
    return [m.text() for m in history_of(conversation.pk)]


# -- fork ----------------------------------------------------------------------------------------


def test_a_fork_copies_the_history_up_to_the_message_and_records_where_it_came_from(
        token_client, bob, conversation, exchange):
    _say(conversation, 5, "And the budget?", author=bob)
    response = _post(token_client(bob), f"/api/conversations/{conversation.pk}/fork",
                     {"message_id": exchange[2].pk})

    assert response.status_code == 201, response.content
    body = response.json()
    fork = Conversation.objects.get(pk=body["id"])
    assert (fork.room_id, fork.title, fork.created_by_id) == (
        conversation.room_id, "Plans (fork)", bob.pk)
    assert body["forked_from"] == {"conversation_id": conversation.pk,
                                   "message_id": exchange[2].pk}
    assert list(exchange[2].forks.all()) == [fork]
    assert _texts(fork) == ["What is in notes.md?", "Reading it.", "(the file)"]
    copies = list(Message.objects.filter(conversation=fork).order_by("position"))
    assert [c.author_id for c in copies] == [exchange[0].author_id, None, None]
    assert {c.created_at for c in copies} == {AN_HOUR_AGO}  # not new messages of anyone's
    assert {c.client_id for c in copies} == {None} and {c.run_id for c in copies} == {None}
    assert (fork.memory_upto, fork.last_seq) == (0, 0)
    forked = ConversationEvent.objects.get(conversation=conversation, kind="conversation_forked")
    assert forked.payload == {"kind": "conversation_forked", "conversation_id": fork.pk,
                              "title": "Plans (fork)", "message_id": exchange[2].pk,
                              "engine_id": None, "by": {"id": bob.pk, "name": "Bob"}}
    assert len(_texts(conversation)) == 5  # the source keeps everything


def test_where_a_fork_came_from_is_shown_both_ways_and_exported(
        token_client, client, bob, conversation, exchange):
    """The source's pages list the forks made at their messages; the fork's page links back
    to the message it was made at; both exports of the fork say where it came from."""
    api = token_client(bob)
    made = _post(api, f"/api/conversations/{conversation.pk}/fork",
                 {"message_id": exchange[3].pk}).json()
    page = api.get(f"/api/conversations/{conversation.pk}/messages").json()
    assert page["forks"] == [{"conversation_id": made["id"], "title": "Plans (fork)",
                              "message_id": exchange[3].pk, "by": {"id": bob.pk, "name": "Bob"}}]
    assert api.get(f"/api/conversations/{made['id']}/messages").json()["forks"] == []

    client.force_login(bob)
    fork_page = client.get(f"/conversations/{made['id']}/").content.decode()
    assert (f'Forked from <a href="/conversations/{conversation.pk}/#message-{exchange[3].pk}">'
            "“Plans”</a>") in fork_page
    source_page = client.get(f"/conversations/{conversation.pk}/").content.decode()
    assert 'id="forked-from"' not in source_page

    exported = json.loads(streamed_body(api.get(f"/api/conversations/{made['id']}/export.json")))
    assert exported["conversation"]["forked_from"] == {"conversation_id": conversation.pk,
                                                       "message_id": exchange[3].pk}
    source = json.loads(streamed_body(api.get(f"/api/conversations/{conversation.pk}/export.json")))
    assert source["conversation"]["forked_from"] is None
    markdown = streamed_body(api.get(f"/api/conversations/{made['id']}/export.md"))
    assert (f"· forked from conversation {conversation.pk} at message {exchange[3].pk}\n"
            in markdown)


def test_a_fork_is_titled_as_one_in_the_forkers_language_and_fits(
        token_client, bob, conversation, exchange):
    path = f"/api/conversations/{conversation.pk}/fork"
    client = token_client(bob)
    zh = client.post(path, data=json.dumps({"message_id": exchange[0].pk}),
                     content_type="application/json", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert zh["title"] == "Plans（分叉）"
    Conversation.objects.filter(pk=conversation.pk).update(title="W" * 200)
    long = _post(client, path, {"message_id": exchange[0].pk}).json()
    assert long["title"] == "W" * 193 + " (fork)" and len(long["title"]) == 200
    Conversation.objects.filter(pk=conversation.pk).update(title="New conversation")
    untitled = _post(client, path, {"message_id": exchange[0].pk}).json()
    assert untitled["title"] == "New conversation"  # titled after its next exchange


@pytest.mark.parametrize("status", [MessageStatus.STREAMING, MessageStatus.PENDING])
def test_a_message_still_being_written_or_waiting_cannot_be_forked(
        token_client, alice, conversation, exchange, status):
    unfinished = Message.objects.create(conversation=conversation, role="assistant",
                                        status=status, content=[])
    response = _post(token_client(alice), f"/api/conversations/{conversation.pk}/fork",
                     {"message_id": unfinished.pk})
    assert response.status_code == 409
    assert response.json() == {"code": "conflict",
                               "message": "That message is not complete yet: fork once it is."}
    assert Conversation.objects.count() == 1


def test_an_answer_whose_tool_call_awaits_approval_cannot_be_forked(
        token_client, alice, conversation, exchange):
    run = Run.objects.create(conversation=conversation, status=RunStatus.AWAITING_APPROVAL,
                             started_by=alice)
    asking = Message.objects.create(
        conversation=conversation, role="assistant", position=5, run=run,
        content=[{"type": "text", "text": "Let me write."},
                 {"type": "tool_use", "id": "call-1", "name": "Write", "input": {}}])
    response = _post(token_client(alice), f"/api/conversations/{conversation.pk}/fork",
                     {"message_id": asking.pk})
    assert response.status_code == 409
    assert response.json() == {
        "code": "conflict",
        "message": "That answer's tool calls have not finished yet: fork once they have."}
    assert Conversation.objects.count() == 1
    Message.objects.create(conversation=conversation, role="tool", position=6, run=run, content=[
        {"type": "tool_result", "tool_use_id": "call-1", "content": "denied"}])
    answered = _post(token_client(alice), f"/api/conversations/{conversation.pk}/fork",
                     {"message_id": asking.pk})
    assert answered.status_code == 201, answered.content


def test_forks_are_isolated_per_team_and_refused_to_viewers(
        token_client, carol, charlie, globex, conversation, exchange):
    from apps.rooms.models import Room
    theirs = Conversation.objects.create(
        room=Room.objects.create(team=globex, name="Globex"), title="Theirs")
    outsider = _post(token_client(charlie), f"/api/conversations/{conversation.pk}/fork",
                     {"message_id": exchange[0].pk})
    missing = _post(token_client(charlie), "/api/conversations/999999/fork",
                    {"message_id": exchange[0].pk})
    assert outsider.status_code == missing.status_code == 404
    assert outsider.json() == missing.json()
    other_message = _post(token_client(charlie), f"/api/conversations/{theirs.pk}/fork",
                          {"message_id": exchange[0].pk})
    assert other_message.status_code == 404 and other_message.json()["code"] == "not_found"
    viewer = _post(token_client(carol), f"/api/conversations/{conversation.pk}/fork",
                   {"message_id": exchange[0].pk})
    assert viewer.status_code == 403
    assert Conversation.objects.count() == 2


# -- edit ----------------------------------------------------------------------------------------


def test_a_blank_edit_is_refused_and_stores_nothing(token_client, alice, conversation, exchange):
    response = _post(token_client(alice),
                     f"/api/conversations/{conversation.pk}/messages/{exchange[0].pk}/edit",
                     {"text": " \n\t "})
    assert response.status_code == 400
    assert response.json() == {"code": "invalid",
                               "message": "The new text is blank: write something."}
    assert Message.objects.filter(conversation=conversation).count() == len(exchange)
    assert not Message.objects.filter(superseded_by__isnull=False).exists()
    assert Run.objects.filter(conversation=conversation).count() == 1


def test_editing_your_last_message_keeps_the_old_version_and_queues_a_run(
        token_client, alice, conversation, exchange):
    response = _post(token_client(alice),
                     f"/api/conversations/{conversation.pk}/messages/{exchange[0].pk}/edit",
                     {"text": "What is in plans.md?"})

    assert response.status_code == 201, response.content
    new = Message.objects.get(pk=response.json()["id"])
    run = Run.objects.get(conversation=conversation, status=RunStatus.QUEUED)
    assert (new.run_id, new.author_id, new.position) == (run.pk, alice.pk, 5)
    assert _texts(conversation) == ["What is in plans.md?"]
    assert {m.superseded_by_id for m in Message.objects.filter(
        pk__in=[m.pk for m in exchange])} == {run.pk}
    kinds = list(ConversationEvent.objects.filter(conversation=conversation)
                 .values_list("kind", flat=True))
    assert kinds == ["run_queued", "messages_superseded", "user_message"]
    superseded = ConversationEvent.objects.get(kind="messages_superseded").payload
    assert superseded["message_ids"] == [m.pk for m in exchange]
    assert superseded["run_id"] == run.pk


def test_only_your_own_last_message_can_be_edited_and_not_during_a_run(
        token_client, alice, bob, conversation, exchange):
    later = _say(conversation, 5, "Also the budget", author=alice)
    path = f"/api/conversations/{conversation.pk}/messages/{{}}/edit"
    not_last = _post(token_client(alice), path.format(exchange[0].pk), {"text": "x"})
    assert not_last.status_code == 409
    not_mine = _post(token_client(bob), path.format(later.pk), {"text": "x"})
    assert not_mine.status_code == 403
    assert not_mine.json()["message"] == "You can edit only your own messages."
    Run.objects.create(conversation=conversation, status=RunStatus.RUNNING, started_by=bob)
    busy = _post(token_client(alice), path.format(later.pk), {"text": "x"})
    assert busy.status_code == 409 and "stop it first" in busy.json()["message"]
    elsewhere = _post(token_client(alice), path.format(999999), {"text": "x"})
    assert elsewhere.status_code == 404
    assert len(_texts(conversation)) == 5
    assert not Message.objects.filter(superseded_by__isnull=False).exists()


def test_a_chat_edit_in_a_mention_conversation_stays_chat_and_one_that_mentions_runs(
        token_client, alice, bob, conversation):
    """In a ``mention`` conversation an edit follows the rules of a send: a new text that does
    not mention the agent is chat (no run, replaced by the new message), one that mentions it
    runs the agent; the earlier versions are in both exports."""
    Conversation.objects.filter(pk=conversation.pk).update(agent_mode="mention")
    said = _say(conversation, 1, "Lunch at noon?", author=bob, wakes_agent=False)
    client = token_client(bob)

    response = _post(client, f"/api/conversations/{conversation.pk}/messages/{said.pk}/edit",
                     {"text": "Lunch at one?"})
    assert response.status_code == 201, response.content
    chat = Message.objects.get(pk=response.json()["id"])
    assert (response.json()["run_id"], response.json()["wakes_agent"]) == (None, False)
    assert not Run.objects.filter(conversation=conversation).exists()
    said.refresh_from_db()
    assert (said.superseded_by_id, said.superseded_by_message_id) == (None, chat.pk)
    assert _texts(conversation) == ["Lunch at one?"]
    events = list(ConversationEvent.objects.filter(conversation=conversation)
                  .values_list("kind", "payload"))
    assert [kind for kind, _ in events] == ["messages_superseded", "user_message"]
    assert {k: events[0][1][k] for k in ("message_ids", "run_id", "message_id")} == {
        "message_ids": [said.pk], "run_id": None, "message_id": chat.pk}

    mentioned = _post(client, f"/api/conversations/{conversation.pk}/messages/{chat.pk}/edit",
                      {"text": "@agent lunch at one?"})
    assert mentioned.status_code == 201, mentioned.content
    run = Run.objects.get(conversation=conversation, status=RunStatus.QUEUED)
    assert (mentioned.json()["run_id"], mentioned.json()["wakes_agent"]) == (run.pk, True)
    chat.refresh_from_db()
    assert (chat.superseded_by_id, chat.superseded_by_message_id) == (run.pk, None)

    exported = json.loads(streamed_body(client.get(
        f"/api/conversations/{conversation.pk}/export.json")))
    assert [(m["superseded_by_run"], m["superseded_by_message"])
            for m in exported["messages"]] == [(None, chat.pk), (run.pk, None), (None, None)]
    markdown = streamed_body(client.get(f"/api/conversations/{conversation.pk}/export.md"))
    assert f"*earlier version, replaced by message {chat.pk}*" in markdown


# -- regenerate ----------------------------------------------------------------------------------


def test_regenerating_keeps_the_old_answer_as_an_earlier_version(
        token_client, bob, conversation, exchange):
    response = _post(token_client(bob), f"/api/conversations/{conversation.pk}/regenerate")

    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["run_id"])
    assert (run.status, run.started_by_id) == (RunStatus.QUEUED, bob.pk)
    assert _texts(conversation) == ["What is in notes.md?"]
    assert list(Message.objects.filter(superseded_by=run).order_by("position")
                .values_list("pk", flat=True)) == [m.pk for m in exchange[1:]]
    assert Message.objects.filter(conversation=conversation).count() == 4  # nothing deleted


def test_regenerating_is_refused_during_a_run_without_an_answer_and_to_viewers(
        token_client, alice, carol, charlie, globex, conversation):
    path = f"/api/conversations/{conversation.pk}/regenerate"
    _say(conversation, 1, "Hello?", author=alice)
    nothing = _post(token_client(alice), path)
    assert nothing.status_code == 409
    assert nothing.json()["message"] == "There is no answer to regenerate."
    _say(conversation, 2, "Hi.", role="assistant")
    assert _post(token_client(carol), path).status_code == 403
    assert _post(token_client(charlie), path).status_code == 404
    Run.objects.create(conversation=conversation, status=RunStatus.RUNNING, started_by=alice)
    busy = _post(token_client(alice), path)
    assert busy.status_code == 409 and "stop it first" in busy.json()["message"]
    assert _texts(conversation) == ["Hello?", "Hi."]


def test_both_exports_carry_the_earlier_versions(token_client, alice, conversation, exchange):
    client = token_client(alice)
    run_id = _post(client, f"/api/conversations/{conversation.pk}/regenerate").json()["run_id"]

    exported = json.loads(streamed_body(client.get(
        f"/api/conversations/{conversation.pk}/export.json")))
    versions = {m["id"]: m["superseded_by_run"] for m in exported["messages"]}
    assert versions == {exchange[0].pk: None, **{m.pk: run_id for m in exchange[1:]}}
    markdown = streamed_body(client.get(f"/api/conversations/{conversation.pk}/export.md"))
    assert markdown.count(f"*earlier version, replaced by run {run_id}*") == 3
    assert "It lists the plans." in markdown
