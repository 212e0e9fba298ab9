"""The agent reads and writes the team wiki while the room watches (issue 10): the offline model
(fakellm over loopback) calls the wiki tools in real runs hosted by the embedded worker, over
real git; every watcher sees ``wiki_changed``; the commit names the person and the run; a
conflict goes back to the model and its retry commits; the exports keep the change."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from apps.accounts.models import Role, Team, User
from apps.accounts.services import membership_set_role
from apps.integrations.forms import builtin_tools
from apps.realtime.groups import wiki_group
from apps.rooms.models import Conversation, ConversationEvent, Run
from apps.wiki.authors import person_author
from apps.wiki.stores import store_for
from tests.integration.wiki_tools.conftest import (
    call,
    connect,
    export,
    results,
    script,
    seed,
    text_of,
)

pytestmark = pytest.mark.django_db(transaction=True)

DECISIONS = "# Decisions\n\n- Ship on Fridays.\n"
LONG = " ".join(f"w{i}" for i in range(150))


async def test_the_agent_writes_a_page_and_every_watcher_sees_it(
        acme: Team, alice: User, bob: User, carol: User, conversation: Conversation,
        worker: None) -> None:
    layer = get_channel_layer()
    wiki_socket = await layer.new_channel()
    await layer.group_add(wiki_group(acme.pk), wiki_socket)
    watchers = [(await connect(person, conversation.pk))[0] for person in (alice, bob, carol)]
    await watchers[1].send({"type": "send", "client_id": "b1", "text": script(
        call("WikiWrite", path="Decisions.md", content=DECISIONS,
             message="Record the shipping decision"),
        {"text": "Written down."})})
    changes = [await w.until_event("wiki_changed") for w in watchers]
    assert changes[0] == changes[1] == changes[2]
    change = changes[0]
    store = await sync_to_async(store_for)(acme)
    page = await asyncio.to_thread(store.read, "Decisions.md")
    assert page.content == DECISIONS
    assert change["path"] == "Decisions.md" and change["commit"] == page.commit
    assert change["author"] == "agent (for Bob)" and change["created"] is True
    assert change["summary"] == "Record the shipping decision"
    assert change["page_url"] == f"/teams/{acme.pk}/wiki/Decisions.md"
    assert change["diff_url"].startswith(f"/api/teams/{acme.pk}/wiki/diff/Decisions.md?from=")
    assert change["diff_url"].endswith(f"&to={page.commit}")
    for w in watchers:
        assert (await w.until_event("run_ended"))["status"] == "completed"
    [result] = results(watchers[0])
    assert result["call_id"] == change["call_id"] and not result["result"]["is_error"]

    # The commit names the person who started the run, the conversation, the run, the call.
    run = await Run.objects.aget(conversation=conversation)
    [entry] = await asyncio.to_thread(store.history, "Decisions.md")
    assert entry.commit.author_name == "agent (for Bob)"
    assert entry.commit.subject == "Record the shipping decision"
    assert entry.commit.trailers == {
        "Confab-User": str(bob.pk), "Confab-Conversation": str(conversation.pk),
        "Confab-Run": str(run.pk), "Confab-Tool-Call": change["call_id"]}

    # The wiki's own pages heard of it; the log keeps it; a fresh state frame shows it.
    heard = await asyncio.wait_for(layer.receive(wiki_socket), 5)
    assert (heard["type"], heard["path"], heard["commit"]) == (
        "wiki.changed", "Decisions.md", page.commit)
    stored = await ConversationEvent.objects.aget(conversation=conversation, kind="wiki_changed")
    assert stored.run_id == run.pk and stored.payload == change
    late, state = await connect(carol, conversation.pk)
    assert state["wiki_changes"] == [change]
    for client in (*watchers, late):
        await client.close()

    # Both exports keep it.
    doc = await export(alice, conversation.pk)
    [exported] = doc["wiki_changes"]
    assert exported["commit"] == page.commit and exported["run_id"] == run.pk
    assert exported["author"] == "agent (for Bob)" and exported["seq"] == stored.seq
    markdown = await export(alice, conversation.pk, "md")
    assert "## Wiki changes" in markdown
    assert "agent (for Bob) created `Decisions.md` — Record the shipping decision" in markdown
    assert f"[diff](<{change['diff_url']}>)" in markdown


async def test_a_conflict_goes_back_to_the_model_and_its_retry_commits(
        acme: Team, alice: User, bob: User, conversation: Conversation, worker: None) -> None:
    store = await sync_to_async(seed)(acme, {"Plan.md": "# Plan\nStatus: draft\n"})
    first = await asyncio.to_thread(store.read, "Plan.md")
    # bob changes the line in the browser after the agent read the page
    bobs = await asyncio.to_thread(lambda: store.write(
        "Plan.md", "# Plan\nStatus: approved by Bob\n", expected_blob=first.blob,
        message="Approve", author=person_author(bob)))
    current_blob = (await asyncio.to_thread(store.read, "Plan.md")).blob
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        call("WikiWrite", path="Plan.md", content="# Plan\nStatus: rejected\n",
             expected_blob=first.blob),
        {"text": "Someone changed it; re-applying."},
        call("WikiWrite", path="Plan.md", content="# Plan\nStatus: approved by Bob; rejected\n",
             expected_blob=current_blob),
        {"text": "Done."})})
    assert (await a.until_event("run_ended"))["status"] == "completed"
    conflict, retry = results(a)
    assert conflict["result"]["is_error"] is True
    text = text_of(conflict)
    assert text.startswith("Conflict: ") and f"blob {current_blob}" in text
    assert "Status: approved by Bob" in text and "<<<<<<<" in text
    assert f'expected_blob="{current_blob}"' in text
    assert not retry["result"]["is_error"], text_of(retry)
    changes = [f["event"] for f in a.events if f["event"]["kind"] == "wiki_changed"]
    assert [c["call_id"] for c in changes] == [retry["call_id"]]
    assert changes[0]["diff_url"].endswith(f"?from={bobs.commit}&to={changes[0]['commit']}")
    page = await asyncio.to_thread(store.read, "Plan.md")
    assert page.content == "# Plan\nStatus: approved by Bob; rejected\n"
    await a.close()


async def test_a_team_can_require_approval_for_wiki_writes(
        acme: Team, alice: User, bob: User, conversation: Conversation, worker: None) -> None:
    acme.tool_policy = {"require": ["WikiWrite"]}
    await acme.asave(update_fields=["tool_policy"])
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        call("WikiRead", path="Nowhere.md"),
        call("WikiWrite", path="Asked.md", content="# Asked\n"), {"text": "ok"})})
    waiting = await b.until_event("awaiting_approval")
    assert waiting["name"] == "WikiWrite"  # the read ran unasked
    store = await sync_to_async(store_for)(acme)
    assert await asyncio.to_thread(store.head) is None  # nothing committed while it waits
    await b.send({"type": "decide", "tool_call_id": waiting["call_id"], "decision": "approve"})
    change = await a.until_event("wiki_changed")
    assert change["path"] == "Asked.md"
    assert (await a.until_event("run_ended"))["status"] == "completed"
    for client in (a, b):
        await client.close()


async def test_a_viewer_cannot_start_a_run_that_writes_the_wiki(
        acme: Team, carol: User, conversation: Conversation, worker: None) -> None:
    c, _ = await connect(carol, conversation.pk)
    await c.send({"type": "send", "client_id": "c1", "text": script(
        call("WikiWrite", path="Carol.md", content="# Carol\n"))})
    refused = await c.until(lambda f: f["type"] == "error")
    assert refused["code"] == "forbidden"
    assert not await Run.objects.filter(conversation=conversation).aexists()
    store = await sync_to_async(store_for)(acme)
    assert await asyncio.to_thread(store.head) is None
    await c.close()


async def test_a_starter_demoted_to_viewer_mid_run_cannot_write(
        acme: Team, alice: User, bob: User, conversation: Conversation, worker: None) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await b.send({"type": "send", "client_id": "b1", "text": script(
        {"text": LONG}, call("WikiWrite", path="Bob.md", content="# Bob\n"), {"text": "ok"})})
    await a.until_event("text_delta")
    await sync_to_async(membership_set_role)(team=acme, user=bob, role=Role.VIEWER, by=alice)
    result = await a.until_event("tool_result")
    assert result["result"]["is_error"] is True
    assert "Viewers can read the wiki but not change it." in text_of(result)
    assert "wiki_changed" not in {f["event"]["kind"] for f in a.events}
    store = await sync_to_async(store_for)(acme)
    assert await asyncio.to_thread(store.head) is None
    await a.until_event("run_ended")
    await a.close()


def test_the_policy_form_lists_the_wiki_tools_as_running_unasked() -> None:
    defaults = {tool.name: tool.default for tool in builtin_tools()}
    for name in ("WikiList", "WikiRead", "WikiSearch", "WikiWrite", "WikiEdit", "WikiHistory"):
        assert defaults[name] == "runs unasked"
    assert defaults["Write"] == "asks"


async def test_a_sub_agents_wiki_change_is_the_rooms_too(
        acme: Team, alice: User, conversation: Conversation, worker: None) -> None:
    a, _ = await connect(alice, conversation.pk)
    task_prompt = script(call("WikiWrite", path="Sub.md", content="# Sub\n"), {"text": "wrote"})
    await a.send({"type": "send", "client_id": "a1", "text": script(
        call("Task", description="write a page", prompt=task_prompt), {"text": "ok"})})
    change = await a.until_event("wiki_changed")
    assert change["path"] == "Sub.md" and change["author"] == "agent (for Alice)"
    assert (await a.until_event("run_ended"))["status"] == "completed"
    nested = [f["event"]["event"]["kind"] for f in a.events
              if f["event"]["kind"] == "subagent_event"]
    assert "tool_result" in nested and "wiki_changed" not in nested
    await a.close()
