"""Consumer tests: the real ASGI application, a run worker in the test's loop, fakellm over
loopback, and WebsocketCommunicator clients for the personas."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator

from apps.accounts.models import Team, User
from apps.integrations.builders import provider_pool
from apps.integrations.demo import ensure_demo_models
from apps.integrations.mcp_pool import mcp_pools
from apps.rooms.embedded import start_embedded_worker
from apps.rooms.models import Conversation, Room
from config.asgi import application
from tests.integration.fakellm_server import serve_fakellm
from tests.integration.personas import *  # noqa: F403
from tests.integration.personas import mint_token

TIMEOUT = 10


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> None:
    """A new in-memory layer per test: its queues belong to the test's event loop."""
    channel_layers.backends.clear()


@pytest.fixture
def conversation(acme: Team, alice: User) -> Conversation:
    room = Room.objects.create(team=acme, name="General", created_by=alice)
    return Conversation.objects.create(room=room, title="Plans", created_by=alice)


@pytest.fixture
def model_requests() -> list[dict[str, Any]]:
    """Every request body the model (fakellm) received in the test, in order."""
    return []


@pytest.fixture
async def model(acme: Team, model_requests: list[dict[str, Any]]) -> AsyncIterator[str]:
    """fakellm on loopback as Acme's model (slow enough to act mid-stream)."""
    async with serve_fakellm(rate=200, bodies=model_requests) as origin:
        await sync_to_async(ensure_demo_models)(acme, fakellm_url=origin)
        yield origin
        await provider_pool.aclose_all()


@pytest.fixture
async def worker(model: str) -> AsyncIterator[None]:
    """The ``agent-runs`` worker, embedded in the test's event loop; its MCP pool is closed
    at the end, as at a worker's shutdown."""
    tasks = start_embedded_worker(application)
    yield
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await mcp_pools.aclose_all()


class Client:
    """One socket of one person, with helpers to read frames."""

    def __init__(self, communicator: WebsocketCommunicator) -> None:
        self.ws = communicator
        self.events: list[dict[str, Any]] = []  # every {"type": "event"} frame, in order
        self.others: list[dict[str, Any]] = []

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send_json_to(frame)

    async def frame(self) -> dict[str, Any]:
        frame = await self.ws.receive_json_from(timeout=TIMEOUT)
        (self.events if frame["type"] == "event" else self.others).append(frame)
        return frame

    async def until(self, predicate: Any) -> dict[str, Any]:
        """Read frames until one satisfies ``predicate``; return it."""
        while True:
            frame = await self.frame()
            if predicate(frame):
                return frame

    async def until_event(self, kind: str, **fields: Any) -> dict[str, Any]:
        frame = await self.until(lambda f: f["type"] == "event" and f["event"]["kind"] == kind
                                 and all(f["event"].get(k) == v for k, v in fields.items()))
        return frame["event"]

    async def close(self) -> None:
        await self.ws.disconnect()


async def connect(user: User | None, conversation_id: int, *, after_seq: int | None = None,
                  headers: list[tuple[bytes, bytes]] | None = None) -> tuple[Client, Any]:
    """Connect as ``user`` (token auth); returns the client and its first frame (or close)."""
    path = f"/ws/conversations/{conversation_id}/"
    if after_seq is not None:
        path += f"?after_seq={after_seq}"
    all_headers = list(headers or [])
    if user is not None:
        token = await sync_to_async(mint_token)(user)
        all_headers.append((b"authorization", f"Bearer {token}".encode()))
    communicator = WebsocketCommunicator(application, path, headers=all_headers)
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    first = await communicator.receive_output(timeout=TIMEOUT)
    client = Client(communicator)
    if first["type"] == "websocket.send":
        frame = json.loads(first["text"])
        (client.events if frame["type"] == "event" else client.others).append(frame)
        return client, frame
    return client, first


def script(*steps: dict[str, Any]) -> str:
    return json.dumps({"script": list(steps)})
