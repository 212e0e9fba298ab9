"""Scale-out with real processes (DESIGN 3.8): two Daphne processes, one run worker, Redis,
PostgreSQL and the fakellm server. Three people on two servers share one run; a reconnect
misses nothing; the export matches what everyone saw; a killed worker leaves an interrupted run
and every message stored before the kill."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest
import websockets

from tests.e2e.harness import ManagedProcess, ProcessStack

pytestmark = pytest.mark.e2e

LONG = " ".join(f"word{i}" for i in range(150))
TIMEOUT = 60


class Watcher:
    """A token client of one conversation on one server, recording every event frame."""

    def __init__(self, server: ManagedProcess, conversation: int, token: str) -> None:
        self.server, self.conversation, self.token = server, conversation, token
        self.events: list[dict[str, Any]] = []
        self.ws: Any = None

    async def open(self, after_seq: int | None = None) -> dict[str, Any]:
        path = f"/ws/conversations/{self.conversation}/"
        if after_seq is not None:
            path += f"?after_seq={after_seq}"
        self.ws = await websockets.connect(self.server.ws_url(path), additional_headers={
            "Authorization": f"Bearer {self.token}"})
        return await self.next()

    async def next(self) -> dict[str, Any]:
        frame = json.loads(await asyncio.wait_for(self.ws.recv(), TIMEOUT))
        if frame["type"] == "event":
            self.events.append(frame)
        return frame

    async def until(self, kind: str, **fields: Any) -> dict[str, Any]:
        while True:
            frame = await self.next()
            event = frame.get("event", {})
            if frame["type"] == "event" and event["kind"] == kind and all(
                    event.get(k) == v for k, v in fields.items()):
                return event

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(frame))

    def seqs(self) -> list[int]:
        return [f["seq"] for f in self.events]


def script(*steps: dict[str, Any]) -> str:
    return json.dumps({"script": list(steps)})


def text_of(events: list[dict[str, Any]]) -> dict[str, str]:
    """Streamed text per assistant message id."""
    texts: dict[str, str] = {}
    for frame in events:
        event = frame["event"]
        if event["kind"] == "text_delta":
            texts[event["message_id"]] = texts.get(event["message_id"], "") + event["text"]
    return texts


@pytest.fixture
def stack(e2e_stack: ProcessStack) -> ProcessStack:
    # Fast heartbeats so a dead worker is noticed within seconds.
    e2e_stack.env.update(CONFAB_HEARTBEAT_S="0.5", CONFAB_STALE_AFTER_S="3")
    return e2e_stack


def test_three_people_two_servers_one_run_then_a_dead_worker(stack: ProcessStack) -> None:
    first, second = stack.start_daphne(), stack.start_daphne()
    worker = stack.start_worker()
    llm = stack.start_fakellm(rate=150)
    stack.env["CONFAB_FAKELLM_URL"] = llm.url
    demo = stack.manage_json(["demo", "--json"])
    asyncio.run(_scenario(stack, first, second, worker, demo))


async def _scenario(stack: ProcessStack, first: ManagedProcess, second: ManagedProcess,
                    worker: ManagedProcess, demo: dict[str, Any]) -> None:
    conversation = demo["conversation"]["id"]
    users = demo["users"]
    alice = Watcher(first, conversation, users["alice"]["token"])
    carol = Watcher(second, conversation, users["carol"]["token"])
    bob = Watcher(second, conversation, users["bob"]["token"])
    for watcher in (alice, carol, bob):
        assert (await watcher.open())["type"] == "state"

    await alice.send({"type": "send", "client_id": "a1", "text": script({"text": LONG})})
    await bob.until("text_delta")
    await bob.send({"type": "send", "client_id": "b1", "text": "and summarise it"})
    await carol.until("text_delta")
    # carol drops mid-stream and comes back on the other server with the last seq she saw
    await carol.ws.close()
    await carol.open(after_seq=carol.seqs()[-1])
    for watcher in (alice, carol, bob):
        ended = await watcher.until("run_ended")
        assert ended["status"] == "completed" and ended["turns"] == 2
    assert alice.seqs() == bob.seqs() == carol.seqs()
    assert alice.seqs() == list(range(1, len(alice.seqs()) + 1))
    streamed = text_of(alice.events)
    assert LONG in streamed.values()

    export = await _export(first, conversation, users["alice"]["token"])
    assistant = {m["engine_id"]: m for m in export["messages"] if m["role"] == "assistant"}
    for message_id, text in streamed.items():
        assert "".join(b.get("text", "") for b in assistant[message_id]["content"]
                       if b["type"] == "text") == text
    people = [(m["author"]["name"], m["content"][0]["text"]) for m in export["messages"]
              if m["role"] == "user"]
    assert people == [("Alice", script({"text": LONG})), ("Bob", "and summarise it")]

    await alice.send({"type": "send", "client_id": "a2", "text": script({"text": LONG})})
    await alice.until("text_delta")
    await alice.until("text_delta")
    stack.kill(worker)
    ended = await alice.until("run_ended", status="interrupted")
    assert ended["error_kind"] == "interrupted"
    export = await _export(second, conversation, users["alice"]["token"])
    last_user = [m for m in export["messages"] if m["role"] == "user"][-1]
    assert last_user["client_id"] == "a2"
    partial = export["messages"][-1]
    assert partial["role"] == "assistant" and partial["status"] == "error"
    assert partial["content"][0]["text"].startswith("word0 word1")
    for watcher in (alice, carol, bob):
        await watcher.ws.close()


async def _export(server: ManagedProcess, conversation: int, token: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(f"{server.url}/api/conversations/{conversation}/export.json",
                                  headers={"Authorization": f"Bearer {token}"})
    response.raise_for_status()
    return response.json()
