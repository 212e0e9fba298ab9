"""Run start (issue 22): nothing but the run's own work stands between a person's send and the
model's request. The claim stamps the heartbeat, so the run's heartbeat task first writes one
``HEARTBEAT_S`` later: a write at once (asgiref shields the thread it runs in, so even a
cancelled beat finishes its commit) would delay the first model request."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from apps.accounts.models import User
from apps.integrations.models import ProviderConfig
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


async def test_a_provider_key_that_no_longer_decrypts_ends_the_run_with_a_setup_error(
        alice: User, conversation: Conversation, worker: None) -> None:
    """A Fernet key removed before ``rotate_secrets`` ran: the run says so and ends, instead
    of crashing its host at every dispatch until the sweeper fails it as never picked up.
    The room still opens: its state frame lists the model without its key."""
    await sync_to_async(_store_raw_api_key)("gAAAAABnot-a-token-any-key-opens")
    client, state = await connect(alice, conversation.pk)
    assert state["conversation"]["settings"]["model"] is not None
    assert state["models"]  # the choices, listed without their keys
    await client.send({"type": "send", "client_id": "k1", "text": "@agent hello"})
    error = await client.until_event("error")
    ended = await client.until_event("run_ended")
    assert error["error_kind"] == "setup"
    assert "cannot be decrypted" in error["message"]
    assert (ended["status"], ended["error_kind"]) == ("failed", "setup")
    await client.close()


def _store_raw_api_key(token: str) -> None:
    """Every provider's stored key, as the database holds it (past the field's encryption)."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {ProviderConfig._meta.db_table} SET api_key = %s", [token])
