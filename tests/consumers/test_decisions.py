"""Decisions on tool calls over the socket (issue 16): the second person to decide is told who
already decided, during the run and after it."""

from __future__ import annotations

import pytest

from apps.accounts.models import User
from tests.consumers.conftest import connect, script

pytestmark = pytest.mark.django_db(transaction=True)

RISKY = {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}}


async def test_the_second_person_to_decide_is_told_who_already_decided(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        RISKY, {"tool_call": {"name": "Bash", "arguments": {"command": "echo again > out.txt"}}},
        {"text": "written"})})
    first = await b.until_event("awaiting_approval")
    await b.send({"type": "decide", "tool_call_id": first["call_id"], "decision": "deny"})
    await a.until_event("approval_decided")
    await a.send({"type": "decide", "tool_call_id": first["call_id"], "decision": "approve"})
    refused = await a.until(lambda f: f["type"] == "error")
    assert refused["code"] == "conflict"
    assert refused["message"] == "Bob already denied this tool call."
    second = await a.until_event("awaiting_approval")
    await a.send({"type": "decide", "tool_call_id": second["call_id"], "decision": "approve"})
    assert (await b.until_event("run_ended"))["status"] == "completed"
    await b.send({"type": "decide", "tool_call_id": second["call_id"], "decision": "deny"})
    late = await b.until(lambda f: f["type"] == "error")
    assert late["message"] == "Alice already approved this tool call."
    await a.close()
    await b.close()
