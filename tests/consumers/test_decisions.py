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


def _decided_uses(state: dict) -> dict[str, tuple[str, object]]:
    return {b["id"]: (b["decision"], b["decided_by"]) for m in state["messages"]
            for b in m["content"] if b.get("type") == "tool_use" and "decision" in b}


async def test_the_state_frame_carries_each_calls_decision_and_who_took_it(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        RISKY, {"tool_call": {"name": "Bash", "arguments": {"command": "echo b > out.txt"}}},
        {"text": "done"})})
    first = await a.until_event("awaiting_approval")
    await a.send({"type": "decide", "tool_call_id": first["call_id"], "decision": "deny"})
    second = await a.until_event("awaiting_approval")
    b, _ = await connect(bob, conversation.pk)
    await b.send({"type": "decide", "tool_call_id": second["call_id"], "decision": "approve"})
    await a.until_event("run_ended")
    again, state = await connect(bob, conversation.pk)
    assert _decided_uses(state) == {
        first["call_id"]: ("denied", {"id": alice.pk, "name": "Alice"}),
        second["call_id"]: ("approved", {"id": bob.pk, "name": "Bob"})}
    for client in (a, b, again):
        await client.close()


async def test_a_call_nobody_decided_in_time_is_timed_out_in_the_state_frame(
        alice: User, conversation, worker, settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "APPROVAL_TIMEOUT_S": 0.2}
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(RISKY, {"text": "ok"})})
    waiting = await a.until_event("awaiting_approval")
    decided = await a.until_event("approval_decided")
    assert decided["decided_by"] is None and decided["approved"] is False
    await a.until_event("run_ended")
    again, state = await connect(alice, conversation.pk)
    assert _decided_uses(state) == {waiting["call_id"]: ("timed_out", None)}
    await a.send({"type": "decide", "tool_call_id": waiting["call_id"], "decision": "approve"})
    late = await a.until(lambda f: f["type"] == "error")
    assert late["message"].startswith("This tool call already timed out")
    for client in (a, again):
        await client.close()


async def test_a_member_edits_a_calls_arguments_before_approving_and_the_edit_runs(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(RISKY, {"text": "ok"})})
    waiting = await b.until_event("awaiting_approval")
    assert waiting["parameters"]["required"] == ["command"]
    edited = {"command": "echo edited-by-bob"}
    await b.send({"type": "decide", "tool_call_id": waiting["call_id"], "decision": "approve",
                  "arguments": edited})
    decided = await a.until_event("approval_decided")
    assert (decided["approved"], decided["decided_by"], decided["arguments"],
            decided["edited_arguments"], decided["edited_by"]) == (
        True, "Bob", RISKY["tool_call"]["arguments"], edited, "Bob")
    result = (await a.until_event("tool_result"))["result"]["content"]
    assert result.startswith("[Bob edited the arguments before approving; the call ran with "
                             '{"command": "echo edited-by-bob"}]')
    assert "edited-by-bob" in result.splitlines()[1]
    await a.until_event("run_ended")
    again, state = await connect(alice, conversation.pk)
    [use] = [blk for m in state["messages"] for blk in m["content"]
             if blk.get("type") == "tool_use"]
    assert (use["input"], use["decision"], use["edited_arguments"]) == (
        RISKY["tool_call"]["arguments"], "approved", edited)
    for client in (a, b, again):
        await client.close()


async def test_edited_arguments_that_do_not_fit_are_invalid_and_the_call_still_waits(
        alice: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(RISKY, {"text": "ok"})})
    call_id = (await a.until_event("awaiting_approval"))["call_id"]
    for decision, arguments, says in (
            ("approve", {"command": 5}, "arguments['command']: 5 is not of type 'string'"),
            ("approve", {"cmd": "ls"}, "'command' is a required property"),
            ("deny", {"command": "ls"}, "Edited arguments come with an approval")):
        await a.send({"type": "decide", "tool_call_id": call_id, "decision": decision,
                      "arguments": arguments})
        refused = await a.until(lambda f: f["type"] == "error")
        assert refused["code"] == "invalid" and says in refused["message"], refused
    await a.send({"type": "decide", "tool_call_id": call_id, "decision": "approve"})
    decided = await a.until_event("approval_decided")
    assert (decided["decided_by"], decided["edited_arguments"]) == ("Alice", None)
    assert (await a.until_event("run_ended"))["status"] == "completed"
    await a.close()


async def test_a_decision_after_a_stop_is_refused_and_not_recorded(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(RISKY, {"text": "done"})})
    waiting = await b.until_event("awaiting_approval")
    await a.send({"type": "stop"})
    await b.until_event("run_stopping")
    await b.send({"type": "decide", "tool_call_id": waiting["call_id"], "decision": "approve"})
    refused = await b.until(lambda f: f["type"] == "error")
    assert (refused["code"], refused["refused"]) == ("conflict", "decide")
    assert (await a.until_event("run_ended"))["status"] == "cancelled"
    again, state = await connect(bob, conversation.pk)
    assert _decided_uses(state) == {}  # the transcript shows no approval of a call never run
    for client in (a, b, again):
        await client.close()
