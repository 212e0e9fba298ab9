"""MCP prompts in the room (issue 24): the ``prompts`` frame lists the prompts of the team's
servers (server-everything over stdio; the SDK test server over HTTP, with a CJK prompt), and
``send.prompt`` expands one into the message sent; a missing required argument, an unknown
prompt or another team's server is refused and nothing is stored; viewers cannot ask."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Team, User
from apps.integrations.models import McpServerConfig
from apps.rooms.models import Conversation, Message
from tests.consumers.conftest import (  # noqa: F401  (fixtures)
    connect,
    conversation,
    fresh_channel_layer,
    model,
    model_requests,
    script,
    worker,
)
from tests.integration.mcp.conftest import allow_loopback, sdk_http_server  # noqa: F401
from tests.services.mcp_servers import everything_command

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def servers(acme: Team, globex: Team, sdk_http_server: str,  # noqa: F811
                  allow_loopback: None) -> None:  # noqa: F811
    command, args, read_paths = await sync_to_async(everything_command)()
    await McpServerConfig.objects.acreate(
        team=acme, name="everything", transport="stdio", command=command, args=list(args),
        read_paths=list(read_paths))
    await McpServerConfig.objects.acreate(team=acme, name="笔记", transport="streamable_http",
                                          url=sdk_http_server)
    await McpServerConfig.objects.acreate(team=globex, name="globex", transport="streamable_http",
                                          url=sdk_http_server)


async def test_the_prompts_frame_lists_every_team_servers_prompts(
        alice: User, carol: User, conversation: Conversation, servers: None,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "prompts"})
    listed = (await a.until(lambda f: f["type"] == "prompts"))["prompts"]
    by_name = {(p["server"], p["name"]): p for p in listed}
    assert by_name[("everything", "args-prompt")]["arguments"] == [
        {"name": "city", "description": "Name of the city", "required": True},
        {"name": "state", "description": "", "required": False}]  # (its zod schema drops it)
    assert by_name[("笔记", "总结")]["arguments"] == [
        {"name": "主题", "description": "", "required": True}]
    assert not any(p["server"] == "globex" for p in listed)  # another team's server
    c, _ = await connect(carol, conversation.pk)
    await c.send({"type": "prompts"})
    assert (await c.until(lambda f: f["type"] == "error"))["code"] == "forbidden"
    await a.close()
    await c.close()


async def test_a_prompt_expands_into_the_message_that_is_sent(
        alice: User, conversation: Conversation, servers: None,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "p1", "text": "/everything:args-prompt",
                  "prompt": {"server": "everything", "name": "args-prompt",
                             "arguments": {"city": "Paris"}}})
    message = (await a.until_event("user_message"))["message"]
    assert message["content"] == [{"type": "text", "text": "/everything:args-prompt"},
                                  {"type": "text", "text": "What's weather in Paris?"}]
    await a.until_event("run_ended")
    await a.send({"type": "send", "client_id": "p2", "text": "/笔记:总结",
                  "prompt": {"server": "笔记", "name": "总结", "arguments": {"主题": "乌龙茶"}}})
    message = (await a.until_event("user_message"))["message"]
    assert message["content"][1] == {"type": "text", "text": "请用三句话总结：乌龙茶"}
    await a.until_event("run_ended")
    await a.close()


async def test_a_prompt_without_its_required_argument_unknown_or_not_the_teams_is_refused(
        alice: User, conversation: Conversation, servers: None,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    a, _ = await connect(alice, conversation.pk)
    cases = ({"server": "everything", "name": "args-prompt", "arguments": {"state": "TX"}},
             {"server": "everything", "name": "no-such-prompt"},
             {"server": "globex", "name": "总结", "arguments": {"主题": "x"}})
    refusals = []
    for n, prompt in enumerate(cases):
        await a.send({"type": "send", "client_id": f"p{n}", "text": "/x", "prompt": prompt})
        refusals.append(await a.until(lambda f: f["type"] == "error"))
    assert [(r["code"], r["client_id"]) for r in refusals] == [
        ("invalid", "p0"), ("not_found", "p1"), ("not_found", "p2")]
    assert refusals[0]["message"] == "/everything:args-prompt needs city."
    assert refusals[2]["message"] == "No MCP server named 'globex'."
    assert not await Message.objects.filter(conversation=conversation).aexists()
    await a.close()
