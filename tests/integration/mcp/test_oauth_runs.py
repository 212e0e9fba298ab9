"""Runs that use an MCP server which needs an OAuth sign-in (issue 23): the offline model calls
the server's ``whoami`` tool through the room's socket with the embedded run worker, and the
server (SDK server-side auth, tests/services/oauth_mcp.py) answers whose token called it."""

from __future__ import annotations

import itertools
import json
import time
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client as HttpClient

from apps.accounts.models import Team, User
from apps.integrations.mcp_builders import mcp_principal
from apps.integrations.mcp_pool import mcp_pools
from apps.integrations.models import McpOAuthConnection, McpServerConfig, McpSignIn
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
from tests.integration.mcp.oauth_kit import oauth_server, sign_in
from tests.services.oauth_mcp import AuthServerState

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("allow_loopback")]
Served = tuple[str, AuthServerState]
_sends = itertools.count()  # a new client_id per message: the same one is a resend
WHOAMI = {"tool_call": {"name": "mcp__tracker__whoami", "arguments": {}}}


@sync_to_async
def signed_in_as(team: Team, user: User, server: Any, state: AuthServerState,
                 subject: str) -> McpOAuthConnection:
    client = HttpClient()
    client.force_login(user)
    sign_in(client, team, server, state, subject)
    owner = None if server.sign_in == McpSignIn.TEAM else user
    return McpOAuthConnection.objects.get(server=server, team=team, user=owner)


async def whoami_run(person: User, conversation_id: int) -> dict[str, Any]:
    """``person`` starts a run that calls whoami; the frames it saw, by kind (last of each)."""
    client, _ = await connect(person, conversation_id)
    await client.send({"type": "send", "client_id": f"m-{person.pk}-{next(_sends)}",
                       "text": script(WHOAMI, {"text": "done"})})
    ended = await client.until_event("run_ended")
    seen = {f["event"]["kind"]: f["event"] for f in client.events if "event" in f}
    await client.close()
    assert ended["status"] == "completed"
    return seen


async def test_each_persons_run_uses_their_own_sign_in(
        acme: Team, alice: User, bob: User, conversation: Conversation,  # noqa: F811
        worker: None, protected: Served) -> None:  # noqa: F811
    url, state = protected
    server = await sync_to_async(oauth_server)(acme, url)
    alices = await signed_in_as(acme, alice, server, state, "remote-alice")
    await signed_in_as(acme, bob, server, state, "remote-bob")
    seen = await whoami_run(alice, conversation.pk)
    assert seen["tool_result"]["result"]["content"] == "signed in as remote-alice"
    seen = await whoami_run(bob, conversation.pk)
    assert seen["tool_result"]["result"]["content"] == "signed in as remote-bob"
    events = json.dumps([e async for e in conversation.events.values_list("payload", flat=True)])
    assert alices.access_token not in events and alices.refresh_token not in events


async def test_the_pool_keeps_each_persons_connection_apart(
        acme: Team, alice: User, bob: User, conversation: Conversation,  # noqa: F811
        worker: None, protected: Served) -> None:  # noqa: F811
    url, state = protected
    server = await sync_to_async(oauth_server)(acme, url)
    await signed_in_as(acme, alice, server, state, "remote-alice")
    await signed_in_as(acme, bob, server, state, "remote-bob")
    for person, subject in ((alice, "remote-alice"), (bob, "remote-bob"),
                            (alice, "remote-alice")):
        seen = await whoami_run(person, conversation.pk)
        assert seen["tool_result"]["result"]["content"] == f"signed in as {subject}"
    keys = {key for key in mcp_pools.get().keys if key.server == server.pk}
    assert {key.principal for key in keys} == {alice.pk, bob.pk}  # warm, one per person


def test_a_person_scoped_server_is_keyed_by_the_person(acme: Team, alice: User) -> None:
    team_wide = McpServerConfig(team=acme, name="t", transport="streamable_http",
                                url="https://t.example/mcp", sign_in=McpSignIn.TEAM)
    personal = McpServerConfig(team=acme, name="p", transport="streamable_http",
                               url="https://p.example/mcp", sign_in=McpSignIn.PERSON)
    assert mcp_principal(team_wide, alice) is None and mcp_principal(personal, alice) == alice.pk


async def test_a_person_not_signed_in_gets_the_server_skipped_with_a_sign_in_link(
        acme: Team, alice: User, bob: User, conversation: Conversation,  # noqa: F811
        worker: None, protected: Served) -> None:  # noqa: F811
    url, state = protected
    server = await sync_to_async(oauth_server)(acme, url)
    await signed_in_as(acme, alice, server, state, "remote-alice")  # alice's is not bob's
    seen = await whoami_run(bob, conversation.pk)
    warning = seen["warning"]
    assert "MCP server 'tracker' is skipped" in warning["message"]
    assert warning["link"] == f"/teams/{acme.pk}/mcp/{server.pk}/sign-in/"
    assert warning["link_text"] == "Sign in"
    assert seen["tool_result"]["result"]["is_error"]  # the tool is not there for bob's run


async def test_a_run_refreshes_an_expired_token_first(
        acme: Team, alice: User, conversation: Conversation,  # noqa: F811
        worker: None, protected: Served) -> None:  # noqa: F811
    url, state = protected
    server = await sync_to_async(oauth_server)(acme, url, sign_in=McpSignIn.TEAM)
    stored = await signed_in_as(acme, alice, server, state, "remote-team")
    old = stored.access_token
    later = time.time() + state.access_ttl_s + 5  # an hour went by, for both sides
    state.clock = lambda: later
    assert stored.expires_at is not None
    stored.expires_at -= timedelta(seconds=state.access_ttl_s + 5)
    await stored.asave(update_fields=["expires_at"])
    seen = await whoami_run(alice, conversation.pk)
    assert seen["tool_result"]["result"]["content"] == "signed in as remote-team"
    assert state.refreshed == 1
    stored = await McpOAuthConnection.objects.aget(server=server)
    assert stored.access_token != old and stored.access_token in state.access


async def test_when_bob_steers_alices_run_the_tool_still_uses_alices_sign_in(
        acme: Team, alice: User, bob: User, conversation: Conversation,  # noqa: F811
        worker: None, protected: Served) -> None:  # noqa: F811
    url, state = protected
    server = await sync_to_async(oauth_server)(acme, url)
    await signed_in_as(acme, alice, server, state, "remote-alice")
    await signed_in_as(acme, bob, server, state, "remote-bob")
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    long_text = " ".join(f"w{i}" for i in range(120))
    await a.send({"type": "send", "client_id": "a1",
                  "text": script({"text": long_text}, WHOAMI, {"text": "done"})})
    await b.until_event("text_delta")
    await b.send({"type": "send", "client_id": "b1", "text": "use mine"})  # steers the run
    assert (await b.until(lambda f: f["type"] == "ack"))["queued"] is True
    result = await b.until_event("tool_result")
    assert result["result"]["content"] == "signed in as remote-alice"
    assert (await a.until_event("run_ended"))["status"] == "completed"
    await a.close()
    await b.close()
