"""Bash in a real run through the room's socket: without the sandbox the room is told so before
the run starts, and Stop ends every process the command started, also one that left the
process group (``setsid``)."""

from __future__ import annotations

import pytest

from apps.accounts.models import Team, User
from apps.engine.tools.sandbox import sandbox_status
from tests.consumers.conftest import connect, script
from tests.unit.engine.mcp.kit import wait_until
from tests.unit.engine.survivors import kill_marked, marker_sleep, running, sleeping

pytestmark = pytest.mark.django_db(transaction=True)

SANDBOXED, SANDBOX_REASON = sandbox_status("auto")


def bash_then_text(command: str) -> str:
    return script({"tool_call": {"name": "Bash", "arguments": {"command": command}}},
                  {"text": "done"})


async def exempt_bash(team: Team) -> None:
    team.tool_policy = {"exempt": ["Bash"]}  # no approval step in these runs
    await team.asave(update_fields=["tool_policy"])


async def test_unconfined_bash_is_announced_and_stop_ends_what_left_the_group(
        settings, acme: Team, alice: User, bob: User, conversation, worker) -> None:
    settings.CONFAB = {**settings.CONFAB, "SANDBOX": "off"}
    await exempt_bash(acme)
    sleep, marker = marker_sleep()
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    try:
        await a.send({"type": "send", "client_id": "a1",
                      "text": bash_then_text(f"setsid {sleep} & {sleep}; wait")})
        warning = await b.until_event("warning")
        assert warning["message"].startswith(
            "Bash runs unconfined in this run (not sandboxed: the sandbox is turned off in the "
            "settings): its commands can reach the network")
        assert "run_started" not in [f["event"]["kind"] for f in b.events]  # told first
        await b.until_event("tool_started")
        await wait_until(lambda: len(sleeping(marker)) == 2, what="both sleeps to run")
        await b.send({"type": "stop"})
        assert (await a.until_event("run_ended"))["status"] == "cancelled"
        assert running(marker=marker) == []  # before the run ended, not some time later
    finally:
        kill_marked(marker)
        await a.close()
        await b.close()


@pytest.mark.skipif(not SANDBOXED, reason=SANDBOX_REASON)
async def test_sandboxed_bash_needs_no_announcement(acme: Team, alice: User, conversation,
                                                    worker) -> None:
    await exempt_bash(acme)
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": bash_then_text("echo hi")})
    assert (await a.until_event("run_ended"))["status"] == "completed"
    assert "warning" not in [f["event"]["kind"] for f in a.events]
    await a.close()
