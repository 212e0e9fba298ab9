"""Run start (issue 22): nothing but the run's own work stands between a person's send and the
model's request. The claim stamps the heartbeat, so the run's heartbeat task first writes one
``HEARTBEAT_S`` later: a write at once (asgiref shields the thread it runs in, so even a
cancelled beat finishes its commit) would delay the first model request."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import User
from apps.rooms.models import Conversation, Run
from tests.consumers.conftest import connect, script

pytestmark = pytest.mark.django_db(transaction=True)


async def test_no_heartbeat_is_written_before_the_first_text(
        alice: User, conversation: Conversation, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    client, _ = await connect(alice, conversation.pk)
    await client.send({"type": "send", "client_id": "h1", "text": script({"text": "hello"})})
    await client.until_event("text_delta")
    run = await Run.objects.aget(conversation=conversation)
    assert run.heartbeat_at == run.started_at  # only the claim's stamp
    await client.until_event("run_ended")
    await client.close()
