"""The database work of a send (issue 22): from a ``send`` frame to its ``ack`` the consumer
makes a fixed number of thread hops and queries, so an extra lookup on the run-start path
shows up here. Both are counted by pass-through wrappers (the work runs on other threads):
asgiref's ``SyncToAsync.__call__`` (``database_sync_to_async`` and Django's async ORM both go
through it) and Django's ``CursorWrapper._execute`` (every statement, savepoints included),
counting only the work of the consumer's ``receive_json`` (a context variable marks it; asgiref
carries it into the thread), not the sweeper's or the test's."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from django.db.backends.utils import CursorWrapper

from apps.accounts.models import User
from apps.rooms.consumers import ConversationConsumer
from apps.rooms.models import Conversation, ConversationEvent
from tests.consumers.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)

IN_FRAME: ContextVar[bool] = ContextVar("IN_FRAME", default=False)


def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """``{"hops": [qualname, ...], "queries": [sql, ...]}``, filled from this call on."""
    seen: dict[str, list[Any]] = {"hops": [], "queries": []}
    call, execute = SyncToAsync.__call__, CursorWrapper._execute
    receive = ConversationConsumer.receive_json

    async def in_frame(self, *args, **kwargs):
        token = IN_FRAME.set(True)
        try:
            return await receive(self, *args, **kwargs)
        finally:
            IN_FRAME.reset(token)

    async def hop(self, *args, **kwargs):
        if IN_FRAME.get():
            seen["hops"].append(getattr(self.func, "__qualname__", "?"))
        return await call(self, *args, **kwargs)

    def query(self, sql, *args):
        if IN_FRAME.get():
            seen["queries"].append(sql)
        return execute(self, sql, *args)

    monkeypatch.setattr(ConversationConsumer, "receive_json", in_frame)
    monkeypatch.setattr(SyncToAsync, "__call__", hop)
    monkeypatch.setattr(CursorWrapper, "_execute", query)
    return seen


async def test_a_send_that_starts_a_run_costs_three_hops_and_fixed_queries(
        alice: User, conversation: Conversation, monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = await connect(alice, conversation.pk)
    seen = counted(monkeypatch)
    await client.send({"type": "send", "client_id": "q1", "text": "@agent hello"})
    ack = await client.until(lambda f: f.get("type") == "ack")
    assert ack["run"] == "started"
    kinds = [k async for k in ConversationEvent.objects.filter(
        conversation=conversation).order_by("seq").values_list("kind", flat=True)]
    assert kinds[-2:] == ["user_message", "run_queued"]  # both events, in this order
    # the token, the membership with the conversation, message_post; no hop for images
    assert len(seen["hops"]) == 3, seen["hops"]
    # the token; membership; conversation; message_post's 16 (one seq UPDATE and one INSERT
    # for its two events); the sidebar's read after the commit
    assert len(seen["queries"]) == 20, "\n".join(seen["queries"])
    await client.close()
