"""The room's sidebar over the conversation socket (issue 19): a socket that sends ``sidebar``
gets the room's conversations newest first, who is in each, and each change live — a new
conversation, a run starting and ending, a title — through one small room-level message;
another team's conversations and people never appear, and a socket that did not ask gets
nothing new."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Team, User
from apps.rooms.models import Conversation, Room
from apps.rooms.services.rooms import (
    conversation_archive,
    conversation_create,
    conversation_delete,
    conversation_rename,
)
from apps.rooms.sidebar import SIDEBAR_LIMIT
from tests.consumers.conftest import Client, connect, script

pytestmark = pytest.mark.django_db(transaction=True)

QUIET = 0.3  # real seconds a socket must stay silent to count as sending nothing


@pytest.fixture(autouse=True)
def intervals(settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "PRESENCE_INTERVAL_S": 0.05, "TAIL_CHECK_S": 3600.0}


async def watch(user: User, conversation_id: int) -> Client:
    """Connect, read the state frame and subscribe to the sidebar."""
    client, state = await connect(user, conversation_id)
    assert state["type"] == "state"
    await client.send({"type": "sidebar"})
    return client


def present(frame: dict[str, Any]) -> dict[str, list[str]]:
    return {cid: [p["name"] for p in people] for cid, people in frame["present"].items()}


def is_presence(expected: dict[str, list[str]]):
    return lambda f: f["type"] == "sidebar_presence" and present(f) == expected


async def test_the_sidebar_lists_the_rooms_conversations_and_who_is_in_each(
        alice: User, bob: User, charlie: User, acme: Team, globex: Team,
        conversation: Conversation) -> None:
    room = conversation.room
    newer = await sync_to_async(Conversation.objects.create)(room=room, title="Newer")
    archived = await sync_to_async(Conversation.objects.create)(room=room, title="Old",
                                                                archived=True)
    other_room = await sync_to_async(Room.objects.create)(team=acme, name="Elsewhere")
    elsewhere = await sync_to_async(Conversation.objects.create)(room=other_room, title="X")
    theirs_room = await sync_to_async(Room.objects.create)(team=globex, name="Globex")
    theirs = await sync_to_async(Conversation.objects.create)(room=theirs_room, title="Secret")

    alice_ws = await watch(alice, conversation.pk)
    rows = (await alice_ws.until(lambda f: f["type"] == "sidebar"))["conversations"]
    assert [(r["id"], r["title"], r["running"]) for r in rows] == [
        (newer.pk, "Newer", False), (conversation.pk, "Plans", False)]  # newest first
    assert archived.pk not in {r["id"] for r in rows}
    await alice_ws.until(is_presence({str(conversation.pk): ["Alice"]}))

    bob_ws, _ = await connect(bob, newer.pk)  # a script: it never asked for the sidebar
    await alice_ws.until(is_presence({str(conversation.pk): ["Alice"], str(newer.pk): ["Bob"]}))
    charlie_ws, _ = await connect(charlie, theirs.pk)  # another team: never in Acme's room
    elsewhere_ws, _ = await connect(bob, elsewhere.pk)  # another room of the team
    bob_in_plans, _ = await connect(bob, conversation.pk)
    await alice_ws.until(is_presence({str(conversation.pk): ["Alice", "Bob"],
                                      str(newer.pk): ["Bob"]}))
    await bob_ws.close()
    await alice_ws.until(is_presence({str(conversation.pk): ["Alice", "Bob"]}))
    assert await alice_ws.ws.receive_nothing(timeout=QUIET)

    assert not [f for f in bob_ws.others if f["type"].startswith("sidebar")]
    charlie_frames = await drain(charlie_ws)
    assert not [f for f in charlie_frames if f["type"].startswith("sidebar")]
    for client in (alice_ws, charlie_ws, elsewhere_ws, bob_in_plans):
        await client.close()


async def drain(client: Client) -> list[dict[str, Any]]:
    """Every frame the socket has for its client now."""
    frames = []
    while not await client.ws.receive_nothing(timeout=QUIET):
        frames.append(await client.frame())
    return frames


async def test_new_conversations_runs_and_titles_reach_the_sidebar_live(
        alice: User, bob: User, charlie: User, globex: Team, conversation: Conversation,
        worker: None) -> None:
    alice_ws = await watch(alice, conversation.pk)
    await alice_ws.until(lambda f: f["type"] == "sidebar")
    theirs_room = await sync_to_async(Room.objects.create)(team=globex, name="Globex")
    theirs = await sync_to_async(Conversation.objects.create)(room=theirs_room, title="Secret")
    charlie_ws = await watch(charlie, theirs.pk)
    await charlie_ws.until(lambda f: f["type"] == "sidebar")

    def row(**fields: Any):
        return lambda f: (f["type"] == "sidebar_conversation"
                          and all(f["conversation"][k] == v for k, v in fields.items()))

    created = await sync_to_async(conversation_create)(room=conversation.room, title="Budget",
                                                       by=bob)
    frame = await alice_ws.until(row(id=created.pk))
    assert frame["conversation"]["title"] == "Budget" and not frame["conversation"]["running"]

    bob_ws, _ = await connect(bob, created.pk)
    await bob_ws.send({"type": "send", "client_id": "c1",
                       "text": script({"text": "Counting the budget."})})
    await alice_ws.until(row(id=created.pk, running=True))
    await bob_ws.until_event("run_ended")
    await alice_ws.until(row(id=created.pk, running=False))

    await sync_to_async(conversation_rename)(conversation=created, title="预算 2027", by=bob)
    await alice_ws.until(row(id=created.pk, title="预算 2027"))

    charlie_frames = await drain(charlie_ws)
    assert not [f for f in charlie_frames if f["type"] == "sidebar_conversation"]
    for client in (alice_ws, bob_ws, charlie_ws):
        await client.close()


async def test_a_viewer_gets_the_sidebar_too(
        carol: User, conversation: Conversation) -> None:
    carol_ws = await watch(carol, conversation.pk)  # viewers watch: the sidebar is a read
    rows = (await carol_ws.until(lambda f: f["type"] == "sidebar"))["conversations"]
    assert [r["id"] for r in rows] == [conversation.pk]
    await carol_ws.close()


async def test_an_archived_or_deleted_conversation_leaves_the_sidebar_live(
        alice: User, bob: User, conversation: Conversation) -> None:
    alice_ws = await watch(alice, conversation.pk)
    await alice_ws.until(lambda f: f["type"] == "sidebar")
    archived = await sync_to_async(conversation_create)(room=conversation.room,
                                                        title="To archive", by=bob)
    deleted = await sync_to_async(conversation_create)(room=conversation.room,
                                                       title="To delete", by=bob)
    await alice_ws.until(lambda f: f["type"] == "sidebar_conversation"
                         and f["conversation"]["id"] == deleted.pk)

    await sync_to_async(conversation_archive)(conversation=archived, by=bob)
    frame = await alice_ws.until(lambda f: f["type"] == "sidebar_removed")
    assert frame == {"type": "sidebar_removed", "conversation_id": archived.pk}
    deleted_id = deleted.pk  # delete() clears it
    await sync_to_async(conversation_delete)(conversation=deleted, by=bob)
    frame = await alice_ws.until(lambda f: f["type"] == "sidebar_removed")
    assert frame == {"type": "sidebar_removed", "conversation_id": deleted_id}
    await alice_ws.close()


async def test_the_watchers_of_a_conversation_are_told_it_was_archived_or_deleted(
        alice: User, bob: User, conversation: Conversation) -> None:
    """Its sidebar row goes, and its own sockets (also those that never asked for the
    sidebar: a script) get an event saying who archived or deleted it (issue 19 review)."""
    watching = await sync_to_async(conversation_create)(room=conversation.room,
                                                        title="Watched", by=alice)
    script_ws, _ = await connect(bob, watching.pk)  # no sidebar
    page_ws = await watch(alice, watching.pk)

    await sync_to_async(conversation_archive)(conversation=watching, by=bob)
    for client in (script_ws, page_ws):
        assert await client.until_event("conversation_archived") == {
            "kind": "conversation_archived", "by": {"id": bob.pk, "name": "Bob"}}
    await sync_to_async(conversation_archive)(conversation=watching, by=bob)  # already

    watching_id = watching.pk  # delete() clears it
    await sync_to_async(conversation_delete)(conversation=watching, by=alice)
    for client in (script_ws, page_ws):
        deleted = await client.until(lambda f: f["type"] == "event"
                                     and f["event"]["kind"] != "conversation_archived")
        assert deleted["event"] == {"kind": "conversation_deleted",
                                    "by": {"id": alice.pk, "name": "Alice"}}
        assert [e["event"]["kind"] for e in client.events] == [
            "conversation_archived", "conversation_deleted"]  # archived once, not twice
    assert not await Conversation.objects.filter(pk=watching_id).aexists()
    await script_ws.send({"type": "send", "client_id": "late", "text": "hello?"})
    refused = await script_ws.until(lambda f: f["type"] == "error")
    assert (refused["code"], refused["client_id"]) == ("not_found", "late")
    await script_ws.close()
    await page_ws.close()


async def test_the_conversation_you_are_in_is_listed_even_past_the_newest_fifty(
        alice: User, conversation: Conversation) -> None:
    room = conversation.room
    await sync_to_async(Conversation.objects.bulk_create)(
        [Conversation(room=room, title=f"Newer {n}") for n in range(SIDEBAR_LIMIT)])
    alice_ws = await watch(alice, conversation.pk)  # "Plans", now the oldest of 51
    frame = await alice_ws.until(lambda f: f["type"] == "sidebar")
    ids = [r["id"] for r in frame["conversations"]]
    assert len(ids) == SIDEBAR_LIMIT + 1 and ids[-1] == conversation.pk  # after the newest 50
    assert frame["more"] is True  # the room has more than the list's 50
    await alice_ws.close()
