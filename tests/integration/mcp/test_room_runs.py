"""MCP tools in real runs: the offline model (fakellm over loopback) calls a tool of a real
stdio MCP server (mcp-server-time) configured for Acme, through the room's socket, with the
embedded run worker; the result reaches every watcher and the exported transcript. A server
that fails to start is a ``warning`` event and the run goes on."""

from __future__ import annotations

import json
import sys

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from apps.accounts.models import Team, User
from apps.integrations.demo import ensure_demo_models
from apps.integrations.mcp_pool import mcp_pools
from apps.integrations.models import McpServerConfig
from apps.rooms.models import Conversation, ConversationEvent, Room
from tests.consumers.conftest import (  # noqa: F401  (fixtures)
    connect,
    conversation,
    fresh_channel_layer,
    model,
    model_requests,
    script,
    worker,
)
from tests.integration.api.streams import body
from tests.integration.mcp.conftest import ENV_SECRET, time_server
from tests.integration.personas import mint_token
from tests.services.mcp_servers import everything_command
from tests.unit.engine.mcp.kit import processes_running

pytestmark = pytest.mark.django_db(transaction=True)

CALL_TIME = {"tool_call": {"name": "mcp__time__get_current_time",
                           "arguments": {"timezone": "UTC"}}}


@sync_to_async
def export(user: User, conversation_id: int) -> dict:
    """GET the JSON export with ``user``'s API token, as a client of the REST API does."""
    client = Client(headers={"Authorization": f"Bearer {mint_token(user)}"})
    response = client.get(f"/api/conversations/{conversation_id}/export.json")
    assert response.status_code == 200
    return json.loads(body(response))


def tool_results(transcript: dict) -> list[dict]:
    return [block for message in transcript["messages"] for block in message["content"]
            if block.get("type") == "tool_result"]


def time_server_pids() -> set[int]:
    """One pid per running mcp-server-time: the root of its tree (its supervisor)."""
    found = processes_running("mcp_server_time")
    pids = {p.pid for p in found}
    return {p.pid for p in found if p.ppid() not in pids}


async def test_the_model_calls_an_mcp_tool_and_every_watcher_sees_the_result(
        acme: Team, alice: User, bob: User, carol: User, conversation: Conversation,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    await sync_to_async(time_server)(acme)
    watchers = [(await connect(person, conversation.pk))[0] for person in (alice, bob, carol)]
    await watchers[0].send({"type": "send", "client_id": "m1",
                            "text": script(CALL_TIME, {"text": "It is time."})})
    results = [await w.until_event("tool_result") for w in watchers]
    for result in results:
        assert result["name"] == "mcp__time__get_current_time"
        assert not result["result"]["is_error"]
        assert '"timezone": "UTC"' in result["result"]["content"]
    assert results[0] == results[1] == results[2]
    for w in watchers:
        assert (await w.until_event("run_ended"))["status"] == "completed"
    assert not any(f["event"]["kind"] == "warning" for w in watchers for f in w.events)
    assert len(time_server_pids()) == 1  # warm in the worker's pool
    transcript = await export(alice, conversation.pk)
    [exported] = tool_results(transcript)
    assert exported["name"] == "mcp__time__get_current_time"
    assert exported["content"] == results[0]["result"]["content"]  # what the room saw
    assert ENV_SECRET not in json.dumps(transcript)
    for w in watchers:
        await w.close()


async def test_the_next_run_uses_the_warm_server_until_its_configuration_changes(
        acme: Team, alice: User, conversation: Conversation,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    row = await sync_to_async(time_server)(acme)
    a, _ = await connect(alice, conversation.pk)

    async def one_run(client_id: str) -> set[int]:
        await a.send({"type": "send", "client_id": client_id,
                      "text": script(CALL_TIME, {"text": "ok"})})
        result = await a.until_event("tool_result")
        assert not result["result"]["is_error"]
        assert (await a.until_event("run_ended"))["status"] == "completed"
        return time_server_pids()

    first = await one_run("m1")
    assert len(first) == 1
    assert await one_run("m2") == first  # no new process for the second run
    row.set_secrets(env={"TIME_API_KEY": "a-new-secret-value"})
    await row.asave()
    await mcp_pools.get().drain()
    third = await one_run("m3")
    assert len(third) == 1 and third != first  # the changed configuration: started again
    await mcp_pools.get().drain()
    assert time_server_pids() == third  # the old one is closed, not left behind
    await mcp_pools.aclose_all()
    assert processes_running("mcp_server_time") == []
    await a.close()


async def test_a_server_that_fails_to_start_is_a_warning_and_the_run_goes_on(
        acme: Team, alice: User, bob: User, conversation: Conversation,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    await sync_to_async(time_server)(acme)
    await McpServerConfig.objects.acreate(
        name="broken", transport="stdio", team=acme, command=sys.executable,
        args=["-c", "import sys; sys.exit(3)"], connect_timeout_s=5)
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "m1",
                  "text": script(CALL_TIME, {"text": "done"})})
    for client in (a, b):
        warning = await client.until_event("warning")
        assert "MCP server 'broken' is unavailable for this run" in warning["message"]
        result = await client.until_event("tool_result")
        assert not result["result"]["is_error"]  # the other server's tool still works
        assert (await client.until_event("run_ended"))["status"] == "completed"
    stored = await sync_to_async(list)(ConversationEvent.objects.filter(
        conversation=conversation, kind="warning").values_list("payload", flat=True))
    assert len(stored) == 1
    await a.close()
    await b.close()


async def test_charlies_team_runs_without_acmes_servers(
        acme: Team, globex: Team, charlie: User, model: str,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    await sync_to_async(time_server)(acme)
    await sync_to_async(ensure_demo_models)(globex, fakellm_url=model)
    room = await Room.objects.acreate(team=globex, name="Ops", created_by=charlie)
    talk = await Conversation.objects.acreate(room=room, title="t", created_by=charlie)
    c, _ = await connect(charlie, talk.pk)
    await c.send({"type": "send", "client_id": "m1", "text": script(CALL_TIME, {"text": "x"})})
    result = await c.until_event("tool_result")
    assert result["result"]["is_error"]  # no such tool for Globex
    assert "mcp__time__get_current_time" in result["result"]["content"]
    assert (await c.until_event("run_ended"))["status"] == "completed"
    await c.close()


async def test_a_server_everything_tool_reaches_every_watcher_and_the_export(
        acme: Team, alice: User, bob: User, carol: User, conversation: Conversation,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    """The issue's end-to-end case: server-everything (from the npm registry) over stdio."""
    command, args, read_paths = await sync_to_async(everything_command)()
    await McpServerConfig.objects.acreate(
        team=acme, name="everything", transport="stdio", command=command, args=list(args),
        read_paths=list(read_paths))
    watchers = [(await connect(person, conversation.pk))[0] for person in (alice, bob, carol)]
    echo = {"tool_call": {"name": "mcp__everything__echo",
                          "arguments": {"message": "hello room"}}}
    await watchers[1].send({"type": "send", "client_id": "e1", "text": script(echo)})
    results = [await w.until_event("tool_result") for w in watchers]
    assert results[0] == results[1] == results[2]
    assert not results[0]["result"]["is_error"]
    assert "hello room" in json.dumps(results[0]["result"]["content"])
    for w in watchers:
        assert (await w.until_event("run_ended"))["status"] == "completed"
    [exported] = tool_results(await export(alice, conversation.pk))
    assert exported["name"] == "mcp__everything__echo"
    assert exported["content"] == results[0]["result"]["content"]
    for w in watchers:
        await w.close()
