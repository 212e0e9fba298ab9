"""What the chaos scenarios share: the demo deployment on a :class:`ProcessStack`, a token
client of one conversation, the store's view of a conversation (the export), and the checks
that make a row's figures (seq-exact sockets, messages lost, deltas duplicated or missing)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import httpx2
import websockets

from tests.chaos.table import Row
from tests.e2e.harness import ManagedProcess, ProcessStack

TIMEOUT = 60.0


@dataclass
class Deployment:
    """The processes of one scenario and the demo team's ids and tokens (``manage.py demo
    --json``: ``conversation.id``, ``users.<name>.token``)."""

    stack: ProcessStack
    servers: list[ManagedProcess]
    workers: list[ManagedProcess]
    llm: ManagedProcess
    demo: dict[str, Any]

    @property
    def conversation(self) -> int:
        return self.demo["conversation"]["id"]

    def token(self, user: str = "alice") -> str:
        return self.demo["users"][user]["token"]


def deploy(stack: ProcessStack, *, servers: int = 2, workers: int = 1,
           rate: float = 150.0) -> Deployment:
    """Daphne ``servers``, run ``workers`` and fakellm at ``rate`` tokens/s, with the demo
    team pointed at that fakellm; fast heartbeats, so a dead worker is noticed in seconds."""
    stack.env.update(CONFAB_HEARTBEAT_S="0.5", CONFAB_STALE_AFTER_S="3")
    started = [stack.start_daphne() for _ in range(servers)]
    running = [stack.start_worker() for _ in range(workers)]
    llm = stack.start_fakellm(rate=rate)
    stack.env["CONFAB_FAKELLM_URL"] = llm.url
    return Deployment(stack, started, running, llm, stack.manage_json(["demo", "--json"]))


class Socket:
    """A token client of one conversation on one server, recording every event frame."""

    def __init__(self, server: ManagedProcess, conversation: int, token: str) -> None:
        self.server, self.conversation, self.token = server, conversation, token
        self.events: list[dict[str, Any]] = []  # every event frame, in order received
        self.others: list[dict[str, Any]] = []
        self.base = 0  # the seq of the first state frame: events up to it came inside it
        self.ws: Any = None

    async def open(self, server: ManagedProcess | None = None) -> dict[str, Any]:
        """Connect (to ``server``, else the last one), resuming after the last seq seen
        (docs/protocol.md, Connecting: ``?after_seq=N``); returns the first frame."""
        self.server = server or self.server
        path = f"/ws/conversations/{self.conversation}/"
        if self.ws is not None:
            path += f"?after_seq={self.last_seq}"
        self.ws = await websockets.connect(self.server.ws_url(path), max_size=None,
                                           additional_headers={
                                               "Authorization": f"Bearer {self.token}"})
        return await self.next()

    @property
    def last_seq(self) -> int:
        return self.events[-1]["seq"] if self.events else self.base

    async def next(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        frame = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        if frame["type"] == "event":
            self.events.append(frame)
        elif frame["type"] == "state" and not self.events and not self.base:
            self.base = frame["seq"]
        else:  # (a later state frame is a resume that missed too much: counted as a gap)
            self.others.append(frame)
        return frame

    async def until(self, kind: str, timeout: float = TIMEOUT, **fields: Any) -> dict[str, Any]:
        """Read until an event of ``kind`` with ``fields``; return the event."""
        async with asyncio.timeout(timeout):
            while True:
                frame = await self.next()
                event = frame.get("event", {})
                if frame["type"] == "event" and event["kind"] == kind and all(
                        event.get(k) == v for k, v in fields.items()):
                    return event

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(frame))

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()


async def export(server: ManagedProcess, conversation: int, token: str) -> dict[str, Any]:
    """The conversation as stored (``/api/conversations/<id>/export.json``)."""
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.get(f"{server.url}/api/conversations/{conversation}/export.json",
                                  headers={"Authorization": f"Bearer {token}"})
    response.raise_for_status()
    return response.json()


async def store_seq(server: ManagedProcess, conversation: int, token: str) -> int:
    """The store's last seq of the conversation: the ``seq`` of a fresh socket's state."""
    fresh = Socket(server, conversation, token)
    try:
        return (await fresh.open())["seq"]
    finally:
        await fresh.close()


def seq_exact(socket: Socket, last: int) -> bool:
    """The socket saw every seq after its first state up to the store's ``last`` once each,
    in order."""
    return [f["seq"] for f in socket.events] == list(range(socket.base + 1, last + 1))


def delta_faults(socket: Socket, last: int) -> tuple[int, int]:
    """(duplicated, missing) events as this socket saw them against the store's ``last``."""
    counts = Counter(frame["seq"] for frame in socket.events)
    duplicated = sum(n - 1 for n in counts.values())
    missing = sum(1 for seq in range(socket.base + 1, last + 1) if seq not in counts)
    return duplicated, missing


async def catch_up(sockets: list[Socket], last: int, *, timeout_s: float = 30.0) -> None:
    """Read each socket until it has seen the store's ``last`` seq (the tail repairs a socket
    within a few seconds); TimeoutError past ``timeout_s`` seconds for one socket."""
    for socket in sockets:
        async with asyncio.timeout(timeout_s):
            while socket.last_seq < last:
                await socket.next()


def count_sockets(row: Row, sockets: list[Socket], last: int) -> None:
    """Fill ``row``'s socket columns against the store's ``last`` seq: sockets, those repaired
    (seq-exact), and the deltas duplicated and missing over all of them."""
    row.sockets = len(sockets)
    row.sockets_repaired = sum(seq_exact(s, last) for s in sockets)
    for socket in sockets:
        duplicated, missing = delta_faults(socket, last)
        row.deltas_duplicated += duplicated
        row.deltas_missing += missing


def streamed_text(events: list[dict[str, Any]]) -> dict[str, str]:
    """Streamed text per assistant message id, from ``text_delta`` events."""
    texts: dict[str, str] = {}
    for frame in events:
        event = frame["event"]
        if event["kind"] == "text_delta":
            texts[event["message_id"]] = texts.get(event["message_id"], "") + event["text"]
    return texts


def stored_text(exported: dict[str, Any]) -> dict[str, str]:
    """Stored text per assistant message (engine) id, from the export."""
    return {m["engine_id"]: "".join(b.get("text", "") for b in m["content"]
                                    if b["type"] == "text")
            for m in exported["messages"] if m["role"] == "assistant"}


def script(*steps: dict[str, Any]) -> str:
    """A message fakellm's scripted model plays (``{"script": [...]}``)."""
    return json.dumps({"script": list(steps)})
