""""Compact now" (issue 14, DESIGN 2.6): a member's ``{"type": "compact"}`` frame compacts the
conversation at once, through the run worker and fakellm, whatever the breaker says; three
failures in a row pause automatic compaction for a cooldown, which the state frame shows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.accounts.models import User
from apps.rooms.models import Conversation, Message, Run, RunPurpose, RunStatus
from tests.consumers.conftest import Client, connect

pytestmark = pytest.mark.django_db(transaction=True)


async def _history(conversation: Conversation, alice: User, turns: int) -> None:
    """``turns`` questions of alice's and the agent's answers, in the history."""
    position = 0
    for turn in range(turns):
        for role, text in (("user", f"question {turn}"), ("assistant", f"answer {turn}")):
            position += 1
            await Message.objects.acreate(
                conversation=conversation, role=role, position=position,
                content=[{"type": "text", "text": text}],
                author=alice if role == "user" else None,
                author_name="Alice" if role == "user" else "")


async def _compact(client: Client) -> list[dict]:
    """Send the frame; the events of the compact run, up to its end."""
    await client.send({"type": "compact"})
    start = len(client.events)
    await client.until_event("run_ended")
    return [frame["event"] for frame in client.events[start:]]


async def test_a_member_compacts_now_and_everyone_sees_it(alice: User, bob: User,
                                                          conversation, worker) -> None:
    await _history(conversation, alice, 3)
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    events = await _compact(b)
    kinds = [event["kind"] for event in events]
    assert kinds[0] == "run_queued" and events[0]["purpose"] == "compact"
    assert events[0]["started_by"]["name"] == "Bob"
    started = next(e for e in events if e["kind"] == "compaction_started")
    compacted = next(e for e in events if e["kind"] == "compacted")
    assert started["reason"] == "manual" and compacted["messages_removed"] >= 1
    assert events[-1]["status"] == "completed"
    assert "text_delta" not in kinds  # no model turn: only the summary call
    await a.until_event("compacted")  # alice sees it too
    summary = await Message.objects.filter(conversation=conversation, compacted=False,
                                           position__isnull=False).order_by("position").afirst()
    assert summary.content[0]["text"].startswith("[Summary of the earlier conversation")
    run = await Run.objects.aget(conversation=conversation)
    assert (run.purpose, run.status, run.started_by_id) == (RunPurpose.COMPACT,
                                                            RunStatus.COMPLETED, bob.pk)
    await a.close()
    await b.close()


async def test_three_failures_pause_compaction_and_the_state_frame_says_until_when(
        alice: User, conversation, worker) -> None:
    await _history(conversation, alice, 0)
    await Message.objects.acreate(conversation=conversation, role="user", position=1,
                                  content=[{"type": "text", "text": "one step only"}])
    a, _ = await connect(alice, conversation.pk)
    for failures in (1, 2, 3):
        events = await _compact(a)
        failed = next(e for e in events if e["kind"] == "compaction_failed")
        assert failed["consecutive_failures"] == failures
        assert "nothing to compact" in failed["message"]
        assert (failed["paused_until"] is None) == (failures < 3)
        assert events[-1]["status"] == "failed"
    await conversation.arefresh_from_db()
    assert conversation.compaction_failures == 3
    left = conversation.compaction_paused_until - timezone.now()
    assert timedelta(minutes=9) < left <= timedelta(minutes=10)  # CONFAB_COMPACTION_COOLDOWN_S
    fresh, state = await connect(alice, conversation.pk)
    assert state["compaction"] == {"failures": 3,
                                   "paused_until": conversation.compaction_paused_until
                                   .isoformat()}
    await fresh.close()
    await a.close()


async def test_compact_now_during_the_cooldown_works_and_closes_the_breaker(
        alice: User, conversation, worker) -> None:
    await _history(conversation, alice, 3)
    await Conversation.objects.filter(pk=conversation.pk).aupdate(
        compaction_failures=4, compaction_paused_until=timezone.now() + timedelta(minutes=5))
    a, state = await connect(alice, conversation.pk)
    assert state["compaction"]["paused_until"] is not None
    events = await _compact(a)
    assert [e["kind"] for e in events].count("compacted") == 1
    await conversation.arefresh_from_db()
    assert (conversation.compaction_failures, conversation.compaction_paused_until) == (0, None)
    await a.close()


async def test_a_viewer_cannot_compact(carol: User, conversation) -> None:
    c, _ = await connect(carol, conversation.pk)
    await c.send({"type": "compact"})
    error = await c.until(lambda f: f["type"] == "error")
    assert error["code"] == "forbidden"
    assert not await Run.objects.filter(conversation=conversation).aexists()
    await c.close()


async def test_compacting_while_a_run_is_active_is_refused(alice: User, conversation) -> None:
    await Run.objects.acreate(conversation=conversation, started_by=alice,
                              status=RunStatus.RUNNING)
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "compact"})
    error = await a.until(lambda f: f["type"] == "error")
    assert error["code"] == "conflict" and "stop it" in error["message"]
    assert await Run.objects.filter(conversation=conversation).acount() == 1
    await a.close()
