"""MCP elicitation in the room (issue 24): server-everything's ``trigger-elicitation-request``,
called by the offline model in a real run, asks the room; members answer over the socket, the
first answer wins, content is checked against the requested schema, a viewer cannot answer,
the wait is in the state frame, and one nobody answers is declined."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Team, User
from apps.integrations.models import McpServerConfig
from apps.rooms.models import Conversation
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

pytestmark = pytest.mark.django_db(transaction=True)

ASK = {"tool_call": {"name": "mcp__everything__trigger-elicitation-request", "arguments": {}}}


async def _everything(team: Team) -> None:
    command, args, read_paths = await sync_to_async(everything_command)()
    await McpServerConfig.objects.acreate(
        team=team, name="everything", transport="stdio", command=command, args=list(args),
        read_paths=list(read_paths))


async def test_a_servers_question_is_answered_by_the_first_member_with_fitting_content(
        acme: Team, alice: User, bob: User, carol: User, conversation: Conversation,  # noqa: F811
        worker: None) -> None:  # noqa: F811
    await _everything(acme)
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    c, _ = await connect(carol, conversation.pk)
    await a.send({"type": "send", "client_id": "m1", "text": script(ASK, {"text": "thanks"})})
    asked = await b.until_event("awaiting_elicitation")
    assert (asked["server"], asked["message"]) == (
        "everything", "Please provide inputs for the following fields:")
    assert asked["schema"]["required"] == ["name"]
    again, state = await connect(alice, conversation.pk)  # a reload while it waits
    assert [e["elicitation_id"] for e in state["waiting"]["elicitations"]] == [
        asked["elicitation_id"]]
    assert state["run"]["status"] == "awaiting_input"
    frame = {"type": "elicit", "elicitation_id": asked["elicitation_id"], "action": "accept"}
    await c.send({**frame, "content": {"name": "Carol"}})
    assert (await c.until(lambda f: f["type"] == "error"))["code"] == "forbidden"
    for content, says in (({"integer": 7}, "'name' is a required property"),
                          ({"name": "Bob", "integer": 1000}, "integer: 1000 is greater than")):
        await b.send({**frame, "content": content})
        refused = await b.until(lambda f: f["type"] == "error")
        assert refused["code"] == "invalid" and says in refused["message"], refused
    await b.send({**frame, "action": "decline", "content": {"name": "Bob"}})
    assert (await b.until(lambda f: f["type"] == "error"))["code"] == "invalid"
    await b.send({**frame, "content": {"name": "Bob Builder", "check": True}})
    answered = await a.until_event("elicitation_answered")
    assert (answered["action"], answered["answered_by"], answered["content"]) == (
        "accept", "Bob", {"name": "Bob Builder", "check": True})
    result = await a.until_event("tool_result")
    assert "- Name: Bob Builder" in str(result["result"]["content"])
    await a.send({**frame, "content": {"name": "Alice"}})
    late = await a.until(lambda f: f["type"] == "error")
    assert late["code"] == "conflict"
    assert (await a.until_event("run_ended"))["status"] == "completed"
    for client in (a, b, c, again):
        await client.close()


async def test_a_servers_question_nobody_answers_is_declined(
        acme: Team, alice: User, conversation: Conversation, worker: None,  # noqa: F811
        settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "ELICITATION_TIMEOUT_S": 0.5}
    await _everything(acme)
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "m1", "text": script(ASK, {"text": "ok"})})
    asked = await a.until_event("awaiting_elicitation")
    answered = await a.until_event("elicitation_answered")
    assert (answered["elicitation_id"], answered["action"], answered["answered_by"]) == (
        asked["elicitation_id"], "decline", None)
    result = await a.until_event("tool_result")
    assert "User declined" in str(result["result"]["content"])
    assert (await a.until_event("run_ended"))["status"] == "completed"
    _, state = await connect(alice, conversation.pk)
    assert state["waiting"]["elicitations"] == []
    await a.close()
