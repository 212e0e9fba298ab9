"""Agent modes on the conversation socket (DESIGN 3.2): ``always`` answers every message;
``mention`` is the people's chat, and the agent runs when mentioned or asked, seeing everything
said since its last turn, with authors."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Team, User
from apps.rooms.models import Conversation, Message, Run
from tests.consumers.conftest import Client, connect, script

pytestmark = pytest.mark.django_db(transaction=True)

LONG = " ".join(f"w{i}" for i in range(120))


@pytest.fixture
async def chat(conversation: Conversation) -> Conversation:
    """The conversation, switched to ``mention``."""
    await Conversation.objects.filter(pk=conversation.pk).aupdate(agent_mode="mention")
    return conversation


async def _send(client: Client, client_id: str, text: str) -> dict[str, Any]:
    await client.send({"type": "send", "client_id": client_id, "text": text})
    return await client.until(lambda f: f["type"] in ("ack", "error")
                              and f.get("client_id") == client_id)


def _said(body: dict[str, Any]) -> list[str]:
    """The people's side of an Anthropic request body: every text of its user turns, in order
    (author labels included)."""
    texts: list[str] = []
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            texts += [b["text"] for b in blocks if b.get("type") == "text"]
    return texts


def _system(body: dict[str, Any]) -> str:
    """The system prompt of an Anthropic request body."""
    system = body.get("system") or ""
    return system if isinstance(system, str) else "".join(b.get("text", "") for b in system)


async def test_always_is_the_default_and_every_message_starts_or_steers(
        alice: User, conversation: Conversation) -> None:
    client, state = await connect(alice, conversation.pk)
    assert state["conversation"]["agent_mode"] == "always"
    first = await _send(client, "a1", "hello")
    second = await _send(client, "a2", "anyone?")
    assert (first["run"], first["queued"]) == ("started", False)
    assert (second["run"], second["queued"]) == ("steering", True)
    await client.close()


async def test_in_mention_mode_chat_starts_nothing_and_joins_the_history(
        alice: User, chat: Conversation) -> None:
    client, state = await connect(alice, chat.pk)
    assert state["conversation"]["agent_mode"] == "mention"
    ack = await _send(client, "a1", "lunch at noon?")
    assert (ack["run"], ack["queued"]) == ("none", False)
    event = await client.until_event("user_message")
    assert event["queued"] is False and event["message"]["wakes_agent"] is False
    assert await Run.objects.filter(conversation=chat).acount() == 0
    row = await Message.objects.aget(pk=ack["message_id"])
    assert row.position == 1 and row.status == "complete"
    await client.close()


@pytest.mark.parametrize(("text", "run"), [
    ("@agent what do you think?", "started"),
    ("what now, @Agent?", "started"),
    ("@AGENT", "started"),
    ("ask @agents", "none"),  # word boundary
    ("type `@agent` to call it", "none"),  # code span
    ("```\n@agent\n```", "none"),  # fenced code
    ("mail ops@agent.io", "none"),  # e-mail address
])
async def test_the_mention_rules_decide_what_wakes_the_agent(
        text: str, run: str, alice: User, chat: Conversation) -> None:
    client, _ = await connect(alice, chat.pk)
    ack = await _send(client, "a1", text)
    assert ack["run"] == run
    assert await Run.objects.filter(conversation=chat).acount() == (run == "started")
    row = await Message.objects.aget(pk=ack["message_id"])
    assert row.wakes_agent is (run == "started")
    await client.close()


async def test_the_teams_handle_calls_the_agent_and_agent_still_does(
        acme: Team, alice: User, chat: Conversation) -> None:
    await Team.objects.filter(pk=acme.pk).aupdate(agent_handle="Robo")
    client, _ = await connect(alice, chat.pk)
    assert (await _send(client, "a1", "@robo hi"))["run"] == "started"
    assert (await _send(client, "a2", "@agent and you?"))["run"] == "steering"
    assert (await _send(client, "a3", "@robot?"))["run"] == "none"
    await client.close()


async def test_a_member_switches_the_mode_and_everyone_sees_who(
        alice: User, bob: User, carol: User, conversation: Conversation) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    c, _ = await connect(carol, conversation.pk)
    await b.send({"type": "set_agent_mode", "agent_mode": "mention"})
    changed = await a.until_event("agent_mode_changed")
    assert changed == {"kind": "agent_mode_changed", "agent_mode": "mention",
                       "by": {"id": bob.pk, "name": "Bob"}}
    assert (await Conversation.objects.aget(pk=conversation.pk)).agent_mode == "mention"
    await c.send({"type": "set_agent_mode", "agent_mode": "always"})
    assert (await c.until(lambda f: f["type"] == "error"))["code"] == "forbidden"
    await b.send({"type": "set_agent_mode", "agent_mode": "sometimes"})
    assert (await b.until(lambda f: f["type"] == "error"))["code"] == "bad_frame"
    assert (await Conversation.objects.aget(pk=conversation.pk)).agent_mode == "mention"
    assert (await _send(a, "a1", "just us now"))["run"] == "none"
    for client in (a, b, c):
        await client.close()


async def test_ask_agent_starts_a_run_that_sees_the_chat_with_authors(
        alice: User, bob: User, chat: Conversation, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    a, _ = await connect(alice, chat.pk)
    b, _ = await connect(bob, chat.pk)
    await _send(a, "a1", "the build is red")
    await _send(b, "b1", "I think it is the cache")
    await b.send({"type": "ask_agent"})
    queued = await a.until_event("run_queued")
    assert queued["started_by"] == {"id": bob.pk, "name": "Bob"}
    await b.send({"type": "ask_agent"})  # the run is active now
    refused = await b.until(lambda f: f["type"] == "error")
    assert refused["code"] == "conflict"
    assert (await a.until_event("run_ended"))["status"] == "completed"
    assert _said(model_requests[-1]) == ["[Alice]", "the build is red",
                                         "[Bob]", "I think it is the cache"]
    assert "you are called when someone writes @agent" in _system(model_requests[-1])
    await a.close()
    await b.close()


async def test_chat_during_a_run_does_not_steer_it_and_the_next_turn_sees_it(
        alice: User, bob: User, chat: Conversation, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    a, _ = await connect(alice, chat.pk)
    b, _ = await connect(bob, chat.pk)
    started = await _send(a, "a1", "@agent " + script({"text": LONG}))
    assert started["run"] == "started"
    await b.until_event("text_delta")
    ack = await _send(b, "b1", "meanwhile: coffee?")
    assert (ack["run"], ack["queued"]) == ("none", True)
    ended = await a.until_event("run_ended")
    assert ended["turns"] == 1 and len(model_requests) == 1
    chat_row = await Message.objects.aget(pk=ack["message_id"])
    assert chat_row.status == "complete" and chat_row.position is not None
    await _send(a, "a2", "@agent what did bob ask?")
    await a.until_event("run_ended")
    assert _said(model_requests[-1])[-4:] == ["[Bob]", "meanwhile: coffee?",
                                              "[Alice]", "@agent what did bob ask?"]
    await a.close()
    await b.close()


async def test_a_mention_during_a_run_steers_it_at_the_next_step(
        alice: User, bob: User, chat: Conversation, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    a, _ = await connect(alice, chat.pk)
    b, _ = await connect(bob, chat.pk)
    await _send(a, "a1", "@agent " + script({"text": LONG}))
    await b.until_event("text_delta")
    ack = await _send(b, "b1", "@agent also check the tests")
    assert (ack["run"], ack["queued"]) == ("steering", True)
    injected = await a.until_event("messages_injected")
    assert injected["messages"][0]["author"]["name"] == "Bob"
    ended = await a.until_event("run_ended")
    assert ended["turns"] == 2
    assert _said(model_requests[1])[-2:] == ["[Bob]", "@agent also check the tests"]
    await a.close()
    await b.close()


async def test_a_resend_gets_the_answer_the_first_send_got(alice: User, chat: Conversation
                                                           ) -> None:
    client, _ = await connect(alice, chat.pk)
    first = await _send(client, "a1", "@agent hi")
    steering = await _send(client, "a2", "@agent and this")
    chatted = await _send(client, "a3", "and hello")
    assert [first["run"], steering["run"], chatted["run"]] == ["started", "steering", "none"]
    for sent in (first, steering, chatted):
        again = await _send(client, sent["client_id"], "resent")
        assert (again["message_id"], again["run"], again["queued"]) == (
            sent["message_id"], sent["run"], sent["queued"])
    await client.close()


@pytest.mark.parametrize("frame", ["ask_agent", "compact"])  # each is a model call
async def test_ask_agent_and_compact_are_rate_limited_like_messages(
        alice: User, chat: Conversation, worker: None, settings, frame: str) -> None:
    settings.CONFAB = {**settings.CONFAB, "MESSAGES_PER_MINUTE": 2}
    a, _ = await connect(alice, chat.pk)
    for _ in range(2):
        await a.send({"type": frame})
        await a.until_event("run_ended")
    await a.send({"type": frame})
    refused = await a.until(lambda f: f["type"] == "error")
    assert (refused["code"], refused["message"]) == (
        "rate_limited", "At most 2 agent turns a minute; wait a moment.")
    await a.close()
