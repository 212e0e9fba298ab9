"""The conversation socket with the personas: watch, send, steer mid-run, stop, approve,
reconnect with after_seq, bad frames, and isolation on every frame."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import Role, User
from apps.accounts.services import membership_remove, membership_set_role
from apps.rooms.models import ConversationEvent, Message, Run, RunStatus
from tests.consumers.conftest import connect, script
from tests.integration.personas import mint_token

pytestmark = pytest.mark.django_db(transaction=True)

LONG = " ".join(f"w{i}" for i in range(120))


async def test_a_member_gets_the_state_then_presence(alice: User, conversation) -> None:
    client, state = await connect(alice, conversation.pk)
    assert state["type"] == "state" and state["seq"] == 0
    assert state["you"]["role"] == "owner" and state["messages"] == []
    assert state["run"] is None
    presence = await client.frame()
    assert presence == {"type": "presence", "present": [{"id": alice.pk, "name": "Alice"}]}
    await client.close()


@pytest.mark.parametrize("who", ["nobody", "charlie"])
async def test_outsiders_are_turned_away(who: str, charlie: User, conversation) -> None:
    user = None if who == "nobody" else charlie
    _, closed = await connect(user, conversation.pk)
    assert closed == {"type": "websocket.close",
                      "code": 4401 if who == "nobody" else 4404}


async def test_a_missing_conversation_looks_like_another_teams(alice: User, conversation
                                                               ) -> None:
    _, closed = await connect(alice, conversation.pk + 999)
    assert closed["code"] == 4404


async def test_a_cookie_session_needs_an_allowed_origin(alice: User, conversation,
                                                        client) -> None:
    await sync_to_async(client.force_login)(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    _, refused = await connect(None, conversation.pk, headers=[(b"cookie", cookie)])
    assert refused["code"] == 4401
    ok, state = await connect(None, conversation.pk, headers=[
        (b"cookie", cookie), (b"origin", b"http://localhost:8000")])
    assert state["type"] == "state" and state["you"]["id"] == alice.pk
    await ok.close()


async def test_two_watchers_see_the_same_run(alice: User, bob: User, conversation,
                                             worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "m1",
                  "text": script({"thinking": "hmm"}, {"text": "Hello room"})})
    ack = await a.until(lambda f: f["type"] == "ack")
    assert ack["client_id"] == "m1" and ack["queued"] is False
    await a.until_event("run_ended")
    await b.until_event("run_ended")
    assert [f["seq"] for f in a.events] == [f["seq"] for f in b.events]
    assert [f["seq"] for f in a.events] == list(range(1, len(a.events) + 1))
    text = "".join(f["event"]["text"] for f in b.events if f["event"]["kind"] == "text_delta")
    assert text == "Hello room"
    assert {f["event"]["kind"] for f in b.events} >= {"user_message", "run_queued",
                                                       "run_started", "reasoning_delta",
                                                       "message_ended", "run_ended"}
    await a.close()
    await b.close()


async def test_bob_steers_mid_run_and_the_next_step_answers(alice: User, bob: User,
                                                            conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script({"text": LONG})})
    await b.until_event("text_delta")
    await b.send({"type": "send", "client_id": "b1", "text": "also check the tests"})
    ack = await b.until(lambda f: f["type"] == "ack")
    assert ack["queued"] is True
    queued = await a.until_event("user_message")
    while not queued["queued"]:
        queued = await a.until_event("user_message")
    assert queued["message"]["author"]["name"] == "Bob"
    injected = await a.until_event("messages_injected")
    assert injected["messages"][0]["author"]["name"] == "Bob"
    ended = await a.until_event("run_ended")
    assert ended["status"] == "completed" and ended["turns"] == 2
    assert ended["stopped_by"] is None  # the field is there, null: nobody stopped it
    rows = await sync_to_async(list)(Message.objects.filter(conversation=conversation)
                                     .order_by("position").values_list("role", "author_name"))
    assert rows == [("user", "Alice"), ("assistant", ""), ("user", "Bob"), ("assistant", "")]
    await a.close()
    await b.close()


async def test_bob_stops_the_run_and_everyone_sees_who(alice: User, bob: User, conversation,
                                                       worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script({"text": LONG})})
    await b.until_event("text_delta")
    await b.send({"type": "stop"})
    stopping = await a.until_event("run_stopping")
    assert stopping["by"] == {"id": bob.pk, "name": "Bob"}
    await a.send({"type": "stop"})  # while it winds down: asked again, not logged again
    ended = await a.until_event("run_ended")
    assert ended["status"] == "cancelled"
    assert ended["stopped_by"] == {"id": bob.pk, "name": "Bob"}  # what the stop told the host
    assert [f["event"]["kind"] for f in a.events].count("run_stopping") == 1
    run = await Run.objects.aget(conversation=conversation)
    assert run.status == RunStatus.CANCELLED and run.stopped_by_id == bob.pk
    partial = await Message.objects.aget(conversation=conversation, role="assistant")
    assert partial.status == "cancelled" and partial.content[0]["text"].startswith("w0 w1")
    await a.close()
    await b.close()


async def test_a_risky_tool_waits_for_a_member_and_a_viewer_cannot_decide(
        alice: User, bob: User, carol: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    c, _ = await connect(carol, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        {"tool_call": {"name": "Bash", "arguments": {"command": "echo hi > out.txt"}}},
        {"text": "written"})})
    waiting = await b.until_event("awaiting_approval")
    await c.send({"type": "decide", "tool_call_id": waiting["call_id"], "decision": "approve"})
    refused = await c.until(lambda f: f["type"] == "error")
    assert refused["code"] == "forbidden"
    await b.send({"type": "decide", "tool_call_id": waiting["call_id"], "decision": "approve"})
    decided = await a.until_event("approval_decided")
    assert decided["approved"] is True and decided["decided_by"] == "Bob"
    result = await a.until_event("tool_result")
    assert not result["result"]["is_error"]
    assert (await a.until_event("run_ended"))["status"] == "completed"
    for client in (a, b, c):
        await client.close()


async def test_a_reconnect_with_after_seq_misses_nothing_and_repeats_nothing(
        alice: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script({"text": LONG})})
    await a.until_event("text_delta")
    await a.until_event("text_delta")
    seen = [f["seq"] for f in a.events]
    await a.close()
    again, _ = await connect(alice, conversation.pk, after_seq=seen[-1])
    await again.until_event("run_ended")
    seqs = seen + [f["seq"] for f in again.events]
    assert seqs == list(range(1, len(seqs) + 1))
    text = "".join(f["event"]["text"] for f in (a.events + again.events)
                   if f["event"]["kind"] == "text_delta")
    assert text == LONG
    await again.close()


async def test_connecting_mid_stream_shows_the_text_so_far(alice: User, bob: User,
                                                           conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script({"text": LONG})})
    await a.until_event("text_delta")
    await a.until_event("text_delta")
    b, state = await connect(bob, conversation.pk)
    streaming = [m for m in state["messages"] if m["status"] == "streaming"]
    so_far = streaming[0]["content"][0]["text"] if streaming and streaming[0]["content"] else ""
    await b.until_event("run_ended")
    rest = "".join(f["event"]["text"] for f in b.events if f["event"]["kind"] == "text_delta")
    assert so_far + rest == LONG
    assert b.events[0]["seq"] == state["seq"] + 1
    await a.close()
    await b.close()


@pytest.mark.parametrize("frame", [
    "not json", {"type": "nope"}, {"type": "send", "text": "no client id"},
    {"type": "send", "client_id": "x", "text": "   "},
    {"type": "decide", "tool_call_id": "c", "decision": "maybe"},
    {"type": "send", "client_id": "x", "text": "hi", "extra": 1}, [1, 2],
])
async def test_a_bad_frame_gets_an_error_and_the_socket_stays_open(
        alice: User, conversation, frame) -> None:
    a, _ = await connect(alice, conversation.pk)
    if isinstance(frame, str):
        await a.ws.send_to(text_data=frame)
    else:
        await a.send(frame)
    error = await a.until(lambda f: f["type"] == "error")
    assert error["code"] == "bad_frame" and error["message"]
    await a.send({"type": "typing"})
    typing = await a.until(lambda f: f["type"] == "presence" and "typing" in f)
    assert typing["typing"]["id"] == alice.pk
    assert await ConversationEvent.objects.filter(conversation=conversation).acount() == 0
    assert await Message.objects.filter(conversation=conversation).acount() == 0
    await a.close()


async def test_a_resend_with_the_same_client_id_is_not_a_second_message(
        alice: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    frame = {"type": "send", "client_id": "same", "text": script({"text": "once"})}
    await a.send(frame)
    first = await a.until(lambda f: f["type"] == "ack")
    await a.send(frame)
    second = await a.until(lambda f: f["type"] == "ack")
    assert first["message_id"] == second["message_id"]
    await a.until_event("run_ended")
    assert await Message.objects.filter(conversation=conversation, role="user").acount() == 1
    await a.close()


async def test_a_viewer_watches_but_cannot_write(carol: User, conversation) -> None:
    c, state = await connect(carol, conversation.pk)
    assert state["you"]["role"] == "viewer"
    for frame in ({"type": "send", "client_id": "c1", "text": "hi"}, {"type": "stop"},
                  {"type": "answer", "question_id": "q", "text": "x"}):
        await c.send(frame)
        error = await c.until(lambda f: f["type"] == "error")
        assert error["code"] == "forbidden"
    assert await Message.objects.filter(conversation=conversation).acount() == 0
    await c.close()


async def test_a_member_removed_from_the_team_is_disconnected(alice: User, bob: User,
                                                              conversation, acme) -> None:
    b, _ = await connect(bob, conversation.pk)
    await sync_to_async(membership_remove)(team=acme, user=bob, by=alice)
    closed = await b.ws.receive_output(timeout=10)
    while closed["type"] != "websocket.close":
        closed = await b.ws.receive_output(timeout=10)
    assert closed["code"] == 4404


async def test_a_demoted_member_is_refused_on_the_next_frame(alice: User, bob: User,
                                                             conversation, acme) -> None:
    b, _ = await connect(bob, conversation.pk)
    await sync_to_async(membership_set_role)(team=acme, user=bob, role=Role.VIEWER, by=alice)
    await b.send({"type": "send", "client_id": "b1", "text": "hi"})
    error = await b.until(lambda f: f["type"] == "error")
    assert error["code"] == "forbidden"
    await b.close()


async def test_presence_lists_who_is_here(alice: User, bob: User, conversation) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.frame()
    b, _ = await connect(bob, conversation.pk)
    joined = await a.until(lambda f: f["type"] == "presence" and len(f.get("present", [])) == 2)
    assert [p["name"] for p in joined["present"]] == ["Alice", "Bob"]
    await b.close()
    left = await a.until(lambda f: f["type"] == "presence" and "present" in f)
    assert [p["name"] for p in left["present"]] == ["Alice"]
    await a.close()


async def test_a_decision_for_a_call_that_is_not_waiting_is_refused(
        alice: User, bob: User, conversation, worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script(
        {"tool_call": {"name": "Write", "arguments": {"file_path": "p1.txt", "content": "1"}}},
        {"tool_call": {"name": "Write", "arguments": {"file_path": "p2.txt", "content": "2"}}},
        {"text": "done"})})
    first = await b.until_event("awaiting_approval")
    while len([f for f in b.events if f["event"]["kind"] == "tool_call_ready"]) < 2:
        await b.frame()
    second = next(f["event"]["call"]["id"] for f in b.events
                  if f["event"]["kind"] == "tool_call_ready"
                  and f["event"]["call"]["id"] != first["call_id"])
    for early in (second, "bogus"):
        await b.send({"type": "decide", "tool_call_id": early, "decision": "approve"})
        refused = await b.until(lambda f: f["type"] == "error")
        assert refused["code"] == "conflict"
    await b.send({"type": "decide", "tool_call_id": first["call_id"], "decision": "approve"})
    later = await b.until_event("awaiting_approval")
    assert later["call_id"] == second
    await b.send({"type": "decide", "tool_call_id": second, "decision": "approve"})
    assert (await a.until_event("run_ended"))["status"] == "completed"
    await a.close()
    await b.close()


async def test_two_people_may_use_the_same_client_id(alice: User, bob: User, conversation,
                                                     worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await b.send({"type": "send", "client_id": "1", "text": script({"text": LONG})})
    from_bob = await b.until(lambda f: f["type"] == "ack")
    await a.send({"type": "send", "client_id": "1", "text": "mine"})
    from_alice = await a.until(lambda f: f["type"] == "ack")
    assert from_alice["message_id"] != from_bob["message_id"]
    assert await Message.objects.filter(conversation=conversation, role="user").acount() == 2
    await b.send({"type": "stop"})
    await a.until_event("run_ended")
    await a.close()
    await b.close()


async def test_an_after_seq_beyond_the_log_still_gets_live_events(alice: User, conversation,
                                                                  worker) -> None:
    a, _ = await connect(alice, conversation.pk, after_seq=10_000)
    await a.send({"type": "send", "client_id": "a1", "text": script({"text": "hello"})})
    assert (await a.until_event("run_ended"))["status"] == "completed"
    assert a.events[0]["seq"] == 1
    await a.close()


async def test_absurdly_nested_json_is_a_bad_frame(alice: User, conversation) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.ws.send_to(text_data="[" * 100_000 + "]" * 100_000)
    error = await a.until(lambda f: f["type"] == "error")
    assert error["code"] == "bad_frame"
    await a.close()


@pytest.mark.parametrize("path", ["/ws/conversations/abc/", "/ws/conversations/-1/", "/ws/x"])
async def test_any_other_socket_path_is_not_found(path: str, alice: User) -> None:
    from channels.testing import WebsocketCommunicator

    from config.asgi import application

    token = await sync_to_async(mint_token)(alice)
    ws = WebsocketCommunicator(application, path,
                               headers=[(b"authorization", f"Bearer {token}".encode())])
    connected, _ = await ws.connect(timeout=10)
    assert connected
    assert (await ws.receive_output(timeout=10)) == {"type": "websocket.close", "code": 4404}


async def test_an_answer_to_no_waiting_question_is_refused(alice: User, conversation,
                                                           worker) -> None:
    a, _ = await connect(alice, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script({"text": LONG})})
    await a.until_event("text_delta")
    await a.send({"type": "answer", "question_id": "nope", "text": "x"})
    error = await a.until(lambda f: f["type"] == "error")
    assert error["code"] == "conflict"
    await a.send({"type": "stop"})
    await a.until_event("run_ended")
    await a.close()
