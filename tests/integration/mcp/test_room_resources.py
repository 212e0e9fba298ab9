"""MCP resources in the room (issue 24), with server-everything for Acme and the offline
model: the agent reads a resource with the server's resource tool; a person attaches one to a
message (``send.attachments``) and the message carries its contents; another team's server, a
missing one and a bad URI are refused and nothing is stored; attachments and the prompts
frame use the warm pool's server instead of starting one each time."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Team, User
from apps.integrations.mcp_pool import mcp_pools
from apps.integrations.models import McpServerConfig
from apps.rooms.models import AgentMode, Conversation, Message
from tests.consumers.conftest import (  # noqa: F401  (fixtures)
    connect,
    conversation,
    fresh_channel_layer,
    model,
    model_requests,
    script,
    worker,
)
from tests.services.mcp_servers import everything_command
from tests.unit.engine.mcp.kit import processes_running

pytestmark = pytest.mark.django_db(transaction=True)

DOC = "demo://resource/static/document/features.md"


async def _everything(team: Team, name: str = "everything") -> None:
    command, args, read_paths = await sync_to_async(everything_command)()
    await McpServerConfig.objects.acreate(
        team=team, name=name, transport="stdio", command=command, args=list(args),
        read_paths=list(read_paths))


async def test_the_agent_reads_a_team_servers_resource_in_a_run(
        acme: Team, alice: User, conversation: Conversation, worker: None) -> None:  # noqa: F811
    await _everything(acme)
    a, _ = await connect(alice, conversation.pk)
    read = {"tool_call": {"name": "mcp__everything__read_resource", "arguments": {"uri": DOC}}}
    await a.send({"type": "send", "client_id": "m1", "text": script(read, {"text": "read"})})
    result = (await a.until_event("tool_result"))["result"]
    assert not result["is_error"]
    assert result["content"].startswith(f"[resource {DOC} (text/markdown)]\n")
    assert (await a.until_event("run_ended"))["status"] == "completed"
    await a.close()


async def test_a_message_with_an_attached_resource_carries_its_contents(
        acme: Team, alice: User, conversation: Conversation, worker: None) -> None:  # noqa: F811
    await _everything(acme)
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "m1", "text": script({"text": "summarised"}),
                  "attachments": [{"kind": "mcp_resource", "server": "everything", "uri": DOC}]})
    ack = await a.until(lambda f: f["type"] == "ack")
    posted = (await a.until_event("user_message"))["message"]
    text, attached = posted["content"]
    assert text["type"] == "text" and attached["type"] == "text"
    assert attached["text"].startswith("[attached from the MCP server 'everything']\n"
                                       f"[resource {DOC} (text/markdown)]\n")
    stored = await Message.objects.aget(pk=ack["message_id"])
    assert stored.content == posted["content"]
    assert (await a.until_event("run_ended"))["status"] == "completed"
    await a.close()


async def test_an_attachment_of_another_teams_server_a_missing_one_or_a_bad_uri_is_refused(
        acme: Team, globex: Team, alice: User, conversation: Conversation,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    await _everything(acme)
    await _everything(globex, name="globex-docs")
    a, _ = await connect(alice, conversation.pk)
    refusals = []
    for n, (server, uri) in enumerate((("globex-docs", DOC), ("nowhere", DOC),
                                       ("everything", "demo://no/such/thing"))):
        await a.send({"type": "send", "client_id": f"m{n}", "text": "look at this",
                      "attachments": [{"kind": "mcp_resource", "server": server, "uri": uri}]})
        refusals.append(await a.until(lambda f: f["type"] == "error"))
    other, missing, bad = refusals
    assert (other["code"], other["client_id"]) == ("not_found", "m0")
    assert other["message"] == "No MCP server named 'globex-docs'."
    assert missing["message"] == "No MCP server named 'nowhere'."  # the same answer
    assert bad["code"] == "invalid" and "demo://no/such/thing" in bad["message"]
    assert not await Message.objects.filter(conversation=conversation).aexists()
    await a.close()


async def test_attachments_and_the_prompts_frame_use_the_warm_server(
        acme: Team, alice: User, conversation: Conversation, worker: None) -> None:  # noqa: F811
    """Chat (``mention`` mode: no runs) so only the person's requests use the server: the
    first attachment starts it in the pool, the next attachment and the prompts frame find it
    there (the same process)."""
    await Conversation.objects.filter(pk=conversation.pk).aupdate(agent_mode=AgentMode.MENTION)
    await _everything(acme)
    _, (script_path, _), _ = await sync_to_async(everything_command)()
    a, _ = await connect(alice, conversation.pk)
    servers: list[set[int]] = []
    for n in range(2):
        await a.send({"type": "send", "client_id": f"m{n}", "text": "see this", "attachments": [
            {"kind": "mcp_resource", "server": "everything", "uri": DOC}]})
        assert (await a.until(lambda f: f["type"] == "ack"))["run"] == "none"
        servers.append({p.pid for p in processes_running(script_path)})
    await a.send({"type": "prompts"})
    prompts = (await a.until(lambda f: f["type"] == "prompts"))["prompts"]
    servers.append({p.pid for p in processes_running(script_path)})
    assert {p["server"] for p in prompts} == {"everything"}
    assert len(servers[0]) >= 1 and servers[0] == servers[1] == servers[2]
    assert [key.team for key in mcp_pools.get().keys] == [acme.pk]
    await a.close()
