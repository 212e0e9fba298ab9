"""The database work of a send and of its run's start and end (issues 20, 22): from a
``send`` frame to its ``ack`` the consumer makes a fixed number of thread hops and queries,
from ``run.start`` to the model's request the run's host makes one hop, and the run's end a
fixed number of queries (a few dozen runs ending together hold the worker's database thread),
so an extra lookup on either path shows up here. Hops are counted by pass-through wrappers
(the work runs on other threads): asgiref's ``SyncToAsync.__call__``
(``database_sync_to_async`` and Django's async ORM both go through it), its
``AsyncToSync.__call__`` (a database thread waiting for the event loop: a commit hook that
sent from there) and Django's ``CursorWrapper._execute`` (every statement, savepoints
included), counting only the work of the consumer's ``receive_json`` or of the run's host (a
context variable marks it; asgiref carries it into the thread), not the sweeper's or the
test's."""

from __future__ import annotations

import asyncio
import functools
from contextvars import ContextVar
from typing import Any

import pytest
from asgiref.sync import AsyncToSync, SyncToAsync
from django.conf import settings
from django.db.backends.utils import CursorWrapper
from django.test import override_settings

from apps.accounts.models import User
from apps.engine.providers.base import HttpProvider
from apps.integrations.models import ModelConfig, TeamAIConfig
from apps.rooms.consumers import ConversationConsumer
from apps.rooms.host import RunHost
from apps.rooms.models import Conversation, ConversationEvent
from tests.consumers.conftest import connect, script

pytestmark = pytest.mark.django_db(transaction=True)

MARK: ContextVar[str] = ContextVar("MARK", default="")


def marking(monkeypatch: pytest.MonkeyPatch, owner: type, name: str, mark: str) -> None:
    """Run ``owner.name`` (a coroutine method) with :data:`MARK` set to ``mark``."""
    method = getattr(owner, name)

    async def marked(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = MARK.set(mark)
        try:
            return await method(self, *args, **kwargs)
        finally:
            MARK.reset(token)

    monkeypatch.setattr(owner, name, marked)


def counted(monkeypatch: pytest.MonkeyPatch, mark: str) -> dict[str, list[Any]]:
    """``{"hops": [qualname, ...], "waits": [...], "queries": [sql, ...]}`` of the work marked
    ``mark``, filled from this call on (``waits``: a database thread's calls into the loop)."""
    seen: dict[str, list[Any]] = {"hops": [], "waits": [], "queries": []}
    call, wait, execute = SyncToAsync.__call__, AsyncToSync.__call__, CursorWrapper._execute

    async def hop(self: Any, *args: Any, **kwargs: Any) -> Any:
        if MARK.get() == mark:
            seen["hops"].append(getattr(self.func, "__qualname__", "?"))
        return await call(self, *args, **kwargs)

    def waited(self: Any, *args: Any, **kwargs: Any) -> Any:
        if MARK.get() == mark:
            seen["waits"].append(getattr(self.awaitable, "__qualname__", "?"))
        return wait(self, *args, **kwargs)

    def query(self: Any, sql: str, *args: Any) -> Any:
        if MARK.get() == mark:
            seen["queries"].append(sql)
        return execute(self, sql, *args)

    monkeypatch.setattr(SyncToAsync, "__call__", hop)
    monkeypatch.setattr(AsyncToSync, "__call__", waited)
    monkeypatch.setattr(CursorWrapper, "_execute", query)
    return seen


async def test_a_send_that_starts_a_run_costs_two_hops_and_fixed_queries(
        alice: User, conversation: Conversation, monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = await connect(alice, conversation.pk)
    marking(monkeypatch, ConversationConsumer, "receive_json", "frame")
    seen = counted(monkeypatch, "frame")
    await client.send({"type": "send", "client_id": "q1", "text": "@agent hello"})
    ack = await client.until(lambda f: f.get("type") == "ack")
    assert ack["run"] == "started"
    kinds = [k async for k in ConversationEvent.objects.filter(
        conversation=conversation).order_by("seq").values_list("kind", flat=True)]
    assert kinds[-2:] == ["user_message", "run_queued"]  # both events, in this order
    # the credentials with the membership and the conversation, message_post; none for images
    assert seen["hops"] == ["ConversationConsumer._frame_checks", "message_post"]
    # the broadcasts and run.start leave from the loop, not from the database thread
    assert seen["waits"] == []
    # the token; membership; conversation; message_post's 11: the resend check, the rate,
    # BEGIN, the lock with the agent mode, the run in a savepoint (3), the position, the
    # message, one seq UPDATE and one INSERT for its two events; the sidebar's read after the
    # commit
    assert len(seen["queries"]) == 15, "\n".join(seen["queries"])
    await client.close()


@pytest.mark.parametrize("team_chose", [True, False], ids=["team-choice", "first-usable"])
async def test_a_run_makes_one_hop_before_its_model_request(
        alice: User, conversation: Conversation, worker: None,
        monkeypatch: pytest.MonkeyPatch, team_chose: bool) -> None:
    if not team_chose:  # the model is the first usable one: its query
        offline = await ModelConfig.objects.aget(model_id="confab-offline")
        await ModelConfig.objects.exclude(pk=offline.pk).aupdate(enabled=False)
        await TeamAIConfig.objects.filter(team_id=conversation.room.team_id).aupdate(
            default_model=None)
    marking(monkeypatch, RunHost, "host", "host")
    seen = counted(monkeypatch, "host")
    begin = counted(monkeypatch, "begin")
    claim_and_setup = RunHost._begin

    @functools.wraps(claim_and_setup)
    def beginning(self: Any, worker: str) -> Any:  # on the database thread
        token = MARK.set("begin")
        try:
            return claim_and_setup(self, worker)
        finally:
            MARK.reset(token)

    monkeypatch.setattr(RunHost, "_begin", beginning)
    at_request: dict[str, list[Any]] = {}
    stream_chat = HttpProvider.stream_chat

    def requesting(self: Any, request: Any) -> Any:
        if not at_request:
            at_request.update({key: list(values) for key, values in seen.items()})
        return stream_chat(self, request)

    monkeypatch.setattr(HttpProvider, "stream_chat", requesting)
    client, _ = await connect(alice, conversation.pk)
    await client.send({"type": "send", "client_id": "r1", "text": script({"text": "hi"})})
    await client.until_event("run_ended")
    # the setup (workspace, previous run, pending messages) with the claim in one hop; the
    # projector stores run_started and turn_started beside the request, not before it
    assert [h for h in at_request["hops"] if h != "Projector._store"] == ["RunHost._begin"]
    assert seen["waits"] == []  # the run's events leave from the loop
    # in that hop: the run with its conversation, room, team (with the team's chosen model
    # and its provider) and starter, the run before it, whether a message waits and whether an
    # MCP server may apply (none here: the team's list is not read); the model when the team
    # chose none (the first usable one); the wiki's record; the history; the claim, which
    # records the run's model
    assert len(begin["queries"]) == (4 if team_chose else 5), "\n".join(begin["queries"])
    assert any(q.startswith('SELECT "integrations_modelconfig"')
               for q in begin["queries"]) is not team_chose
    assert not any(q.startswith('SELECT "integrations_mcpserverconfig"')
                   for q in begin["queries"])
    assert begin["queries"][-1].startswith('UPDATE "rooms_run" SET "status"')
    await client.close()


@override_settings(CONFAB={**settings.CONFAB, "HWM_INTERVAL_S": 0.05})  # the last mark soon
async def test_a_run_ends_with_fixed_queries(
        alice: User, conversation: Conversation, worker: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    hosted, hosting = asyncio.Event(), RunHost.host

    async def host_then_say(self: RunHost, *args: Any) -> None:
        try:
            await hosting(self, *args)
        finally:
            hosted.set()

    monkeypatch.setattr(RunHost, "host", host_then_say)
    marking(monkeypatch, RunHost, "host", "host")
    host = counted(monkeypatch, "host")
    end = counted(monkeypatch, "finish")
    finish = RunHost._finish

    @functools.wraps(finish)
    def finishing(self: Any, *args: Any) -> Any:  # on the database thread
        token = MARK.set("finish")
        try:
            return finish(self, *args)
        finally:
            MARK.reset(token)

    monkeypatch.setattr(RunHost, "_finish", finishing)
    client, _ = await connect(alice, conversation.pk)
    await client.send({"type": "send", "client_id": "e1", "text": script({"text": "hi"})})
    await client.until_event("run_ended")
    # BEGIN; the seq and run_ended; the run's status; whether a message is pending; the
    # sidebar's row after the commit. Not read again (who stopped it came with the stop), nor
    # under a savepoint, nor locked again; no compaction state the run did not change, no
    # look for messages left streaming when the projector ended every one it began.
    assert len(end["queries"]) == 6, "\n".join(end["queries"])
    await asyncio.wait_for(hosted.wait(), 10)  # the host's after-end work done too
    # the conversation has a title: no hop to see whether the model should propose one
    assert "_first_exchange" not in host["hops"], host["hops"]
    await client.close()
