"""The state frame mid-run (issue 16, items 2 and 10): a socket that connects while a batch is
still running sees the calls of that batch that have finished with their results, the run's
step, and how full the context was at the last model call."""

from __future__ import annotations

import pytest

from apps.accounts.models import User
from tests.consumers.conftest import connect, script

pytestmark = pytest.mark.django_db(transaction=True)

READ = {"tool_call": {"name": "Read", "arguments": {"file_path": "notes.txt"}}}
RISKY = {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}}


def _uses(state: dict) -> dict[str, dict]:
    return {b["name"]: b for m in state["messages"] for b in m["content"]
            if b.get("type") == "tool_use"}


async def test_a_finished_call_of_a_running_batch_carries_its_result(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(READ, RISKY,
                                                                    {"text": "done"})})
    read = await a.until_event("tool_result", name="Read")
    waiting = await a.until_event("awaiting_approval")
    b, state = await connect(bob, conversation.pk)
    uses = _uses(state)
    assert uses["Read"]["result"] == read["result"]
    assert uses["Read"]["result"]["is_error"] is True  # notes.txt does not exist
    assert uses["Read"]["duration_ms"] == read["duration_ms"]
    assert "result" not in uses["Bash"] and uses["Bash"]["id"] == waiting["call_id"]
    await a.send({"type": "decide", "tool_call_id": waiting["call_id"], "decision": "deny"})
    await a.until_event("run_ended")
    again, after = await connect(bob, conversation.pk)
    assert all("result" not in use for use in _uses(after).values())  # now in their message
    for client in (a, b, again):
        await client.close()


async def test_the_step_and_the_context_gauge_survive_a_reconnect(
        alice: User, bob: User, conversation, worker) -> None:
    a, first = await connect(alice, conversation.pk)
    assert first["usage"] is None and first["run"] is None
    await a.send({"type": "send", "client_id": "a1", "text": script(READ, RISKY,
                                                                    {"text": "done"})})
    usage = await a.until_event("usage")
    await a.until_event("awaiting_approval")
    b, state = await connect(bob, conversation.pk)
    assert state["run"]["turn"] == 1
    assert state["usage"] == {key: usage[key] for key in
                              ("usage", "context_tokens", "context_window")}
    assert state["usage"]["context_tokens"] > 0 and state["usage"]["context_window"] > 0
    for client in (a, b):
        await client.close()
