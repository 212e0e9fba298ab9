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
from apps.integrations.models import ModelConfig, ProviderConfig
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
    assert (ended["status"], ended["error_kind"], ended["stopped_by"]) == ("failed", "setup", None)
    await client.close()


async def test_a_key_no_key_opens_stops_only_the_runs_that_use_it(
        alice: User, conversation: Conversation, worker: None, model: str) -> None:
    """The team's chosen model is read with every run (its setup's one query); its provider's
    key is decrypted only when a run uses that model, not for a conversation with its own."""
    await sync_to_async(_own_model)(conversation, model)
    await sync_to_async(_store_raw_api_key)("gAAAAABnot-a-token-any-key-opens",
                                            name="Offline scripted model (fakellm)")
    client, _ = await connect(alice, conversation.pk)
    await client.send({"type": "send", "client_id": "k2", "text": script({"text": "fine"})})
    ended = await client.until_event("run_ended")
    assert ended["status"] == "completed"
    assert not any(e["event"]["kind"] == "error" for e in client.events)
    await client.close()


def _own_model(conversation: Conversation, origin: str) -> None:
    """The conversation's own model: fakellm again, under a provider with a key of its own."""
    provider = ProviderConfig.objects.create(name="Second", kind="anthropic", base_url=origin,
                                             api_key="sk-second")
    conversation.model = ModelConfig.objects.create(provider=provider, model_id="second")
    conversation.save(update_fields=["model"])


def _store_raw_api_key(token: str, *, name: str | None = None) -> None:
    """The stored key of every provider (or the one named), as the database holds it (past
    the field's encryption)."""
    rows = ProviderConfig.objects.filter(**({"name": name} if name else {}))
    with connection.cursor() as cursor:
        for pk in rows.values_list("pk", flat=True):
            cursor.execute(f"UPDATE {ProviderConfig._meta.db_table} SET api_key = %s "
                           "WHERE id = %s", [token, pk])
