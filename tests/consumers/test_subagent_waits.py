"""A Task sub-agent's approvals and AskUser questions (issue 16, item 3) work like the top-level
ones: they arrive nested in ``subagent_event``, a member decides or answers them over the socket,
the run waits in the meantime, and a socket that connects sees them in the state's ``waiting``."""

from __future__ import annotations

import pytest

from apps.accounts.models import User
from apps.rooms.models import Run, RunStatus
from tests.consumers.conftest import Client, connect, script

pytestmark = pytest.mark.django_db(transaction=True)

RISKY = {"tool_call": {"name": "Bash", "arguments": {"command": "echo sub > sub.txt"}}}
ASK = {"tool_call": {"name": "AskUser", "arguments": {"question": "Which branch?"}}}


def _task(*steps: dict) -> dict:
    return {"tool_call": {"name": "Task", "arguments": {"description": "do the work",
                                                        "prompt": script(*steps)}}}


async def _nested(client: Client, kind: str) -> dict:
    frame = await client.until(lambda f: f["type"] == "event"
                               and f["event"]["kind"] == "subagent_event"
                               and f["event"]["event"]["kind"] == kind)
    return frame["event"]


async def test_a_member_decides_a_sub_agents_tool_call(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        _task(RISKY, {"text": "wrote sub.txt"}), {"text": "the sub-agent is done"})})
    waiting = await _nested(a, "awaiting_approval")
    call_id = waiting["event"]["call_id"]
    run = await Run.objects.aget(conversation=conversation)
    assert run.status == RunStatus.AWAITING_APPROVAL
    b, state = await connect(bob, conversation.pk)
    [listed] = state["waiting"]["approvals"]
    assert listed["call_id"] == call_id and listed["parent_call_id"] == waiting["parent_call_id"]
    await b.send({"type": "decide", "tool_call_id": call_id, "decision": "approve"})
    decided = await _nested(a, "approval_decided")
    assert decided["event"]["approved"] is True
    assert decided["event"]["decided_by"] == "Bob"
    result = await _nested(a, "tool_result")
    assert result["event"]["call_id"] == call_id and not result["event"]["result"]["is_error"]
    assert (await a.until_event("run_ended"))["status"] == "completed"
    await b.send({"type": "decide", "tool_call_id": call_id, "decision": "deny"})
    late = await b.until(lambda f: f["type"] == "error")
    assert late["message"] == "Bob already approved this tool call."
    for client in (a, b):
        await client.close()


async def test_a_member_answers_a_sub_agents_question(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        _task(ASK, {"text": "asked"}), {"text": "done"})})
    asked = await _nested(a, "awaiting_input")
    question_id = asked["event"]["question_id"]
    b, state = await connect(bob, conversation.pk)
    assert [q["question_id"] for q in state["waiting"]["questions"]] == [question_id]
    await b.send({"type": "answer", "question_id": question_id, "text": "main"})
    received = await _nested(a, "input_received")
    assert (received["event"]["answer"], received["event"]["answered_by"]) == ("main", "Bob")
    assert (await a.until_event("run_ended"))["status"] == "completed"
    await a.send({"type": "answer", "question_id": question_id, "text": "too late"})
    late = await a.until(lambda f: f["type"] == "error")
    assert (late["code"], late["message"]) == ("conflict", "Bob already answered this question.")
    again, after = await connect(bob, conversation.pk)
    assert after["waiting"] == {"approvals": [], "questions": [], "elicitations": []}
    for client in (a, b, again):
        await client.close()


async def test_a_sub_agents_decided_calls_come_back_with_the_task_call(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        _task(RISKY, {"tool_call": {"name": "Read", "arguments": {"file_path": "sub.txt"}}},
              {"text": "wrote sub.txt"}), {"text": "the sub-agent is done"})})
    waiting = await _nested(a, "awaiting_approval")
    await a.send({"type": "decide", "tool_call_id": waiting["event"]["call_id"],
                  "decision": "approve"})
    await a.until_event("run_ended")
    b, state = await connect(bob, conversation.pk)
    [task] = [block for m in state["messages"] for block in m["content"]
              if block.get("type") == "tool_use" and block["name"] == "Task"]
    kinds = [(e["kind"], e.get("call_id")) for e in task["subagent_waits"]]
    call_id = waiting["event"]["call_id"]
    assert kinds == [("awaiting_approval", call_id), ("approval_decided", call_id),
                     ("tool_result", call_id)]  # the Read nobody had to answer is not there
    assert task["subagent_waits"][1]["decided_by"] == "Alice"
    for client in (a, b):
        await client.close()
