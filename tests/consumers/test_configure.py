"""A conversation's model and reasoning controls (issue 17, DESIGN 2.1): members choose them
with ``configure``, the room hears ``settings_changed``, the next run calls the model with
them, and each run records what it used (the state frame's ``run``, both exports)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import AsyncClient

from apps.accounts.models import User
from apps.integrations.models import ModelConfig, TeamAIConfig
from apps.rooms.models import Conversation, ConversationEvent, Run
from tests.consumers.conftest import Client, connect, script

pytestmark = pytest.mark.django_db(transaction=True)

LONG = " ".join(f"w{i}" for i in range(120))
THINKING = {"thinking_type": "enabled", "thinking_budget": 2048}


@pytest.fixture
async def thinker(model: str) -> ModelConfig:
    """A second model of the offline provider, declaring thinking controls (with a default
    budget the member's choice replaces)."""
    offline = await ModelConfig.objects.select_related("provider").aget(model_id="confab-offline")
    return await ModelConfig.objects.acreate(
        provider=offline.provider, model_id="confab-offline-thinking", display_name="Thinker",
        extend_params=["thinking_type", "thinking_budget", "effort"],
        default_reasoning={"thinking_budget": 1024, "disable_context_caching": True})


async def _configure(client: Client, **frame: Any) -> dict[str, Any]:
    """Send ``configure`` and read the answer: the room's ``settings_changed`` event or an
    ``error`` frame."""
    await client.send({"type": "configure", **frame})
    return await client.until(lambda f: f["type"] == "error" or (
        f["type"] == "event" and f["event"]["kind"] == "settings_changed"))


async def _reply(client: Client, client_id: str, text: str) -> dict[str, Any]:
    await client.send({"type": "send", "client_id": client_id, "text": text})
    return await client.until_event("run_ended")


async def test_the_state_lists_the_models_and_their_controls(
        alice: User, conversation: Conversation, thinker: ModelConfig) -> None:
    client, state = await connect(alice, conversation.pk)
    offline = await ModelConfig.objects.aget(model_id="confab-offline")
    assert state["conversation"]["settings"] == {"model": offline.pk, "reasoning": {}}
    by_id = {m["id"]: m for m in state["models"]}
    assert by_id[thinker.pk] == {
        "id": thinker.pk, "name": "Thinker", "model_id": "confab-offline-thinking",
        "provider": "Offline scripted model (fakellm)",
        "controls": ["thinking_type", "thinking_budget", "effort"],
        "defaults": {"thinking_budget": 1024}}
    assert by_id[offline.pk]["controls"] == []
    await client.close()


async def test_a_change_applies_from_the_next_run_which_records_it(
        alice: User, bob: User, conversation: Conversation, thinker: ModelConfig, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    a, _ = await connect(alice, conversation.pk)
    b, _ = await connect(bob, conversation.pk)
    await a.send({"type": "send", "client_id": "a1", "text": script({"text": LONG})})
    await a.until_event("text_delta")  # the first run is under way with the team's model
    changed = await _configure(b, model=thinker.pk, reasoning=THINKING)
    assert changed["event"] == {"kind": "settings_changed", "model": thinker.pk,
                                "reasoning": THINKING, "by": {"id": bob.pk, "name": "Bob"}}
    heard = await a.until_event("settings_changed")
    assert (heard["model"], heard["reasoning"], heard["by"]["name"]) == (thinker.pk, THINKING,
                                                                        "Bob")
    await a.until_event("run_ended")
    first = model_requests[-1]
    assert first["model"] == "confab-offline" and "thinking" not in first

    await _reply(a, "a2", script({"text": "with thought"}))
    second = model_requests[-1]
    assert second["model"] == "confab-offline-thinking"
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    runs = [r async for r in Run.objects.filter(conversation=conversation).order_by("id")]
    assert [(r.model, r.reasoning) for r in runs] == [
        ("confab-offline", None),
        ("confab-offline-thinking", {**THINKING, "disable_context_caching": True})]
    await a.close()
    await b.close()


async def test_the_active_run_in_the_state_says_what_it_runs_with(
        alice: User, conversation: Conversation, thinker: ModelConfig, worker: None) -> None:
    a, _ = await connect(alice, conversation.pk)
    await _configure(a, model=thinker.pk, reasoning={"effort": "high"})
    await a.send({"type": "send", "client_id": "a1", "text": script({"text": LONG})})
    await a.until_event("text_delta")
    late, state = await connect(alice, conversation.pk)
    assert state["run"]["model"] == "confab-offline-thinking"
    assert state["run"]["reasoning"] == {"effort": "high", "thinking_budget": 1024,
                                         "disable_context_caching": True}
    assert state["conversation"]["settings"] == {"model": thinker.pk,
                                                 "reasoning": {"effort": "high"}}
    await a.send({"type": "stop"})
    await a.until_event("run_ended")
    await a.close()
    await late.close()


@pytest.mark.parametrize(("frame", "says"), [
    ({"model": 999_999, "reasoning": {}}, "no model 999999"),
    ({"reasoning": {"effort": "high"}}, "no 'effort' control"),  # the offline model: none
    ({"thinker": True, "reasoning": {"verbosity": "low"}}, "no 'verbosity' control"),
    ({"thinker": True, "reasoning": {"text_verbosity": "low"}}, "no 'text_verbosity'"),
    ({"thinker": True, "reasoning": {"thinking_budget": -1}}, "thinking_budget"),
    ({"thinker": True, "reasoning": {"effort": "extreme"}}, "effort"),
    ({"thinker": True, "reasoning": {"thinking_budget": "500"}}, "thinking_budget"),  # no coercion
    ({"thinker": True, "reasoning": {"thinking_budget": True}}, "thinking_budget"),
    ({"thinker": True, "reasoning": {"thinking_budget": 10**20}}, "thinking_budget"),
    ({"thinker": True, "reasoning": {"thinking_type": 1}}, "thinking_type"),
])
async def test_a_bad_choice_is_invalid_and_nothing_is_stored(
        alice: User, conversation: Conversation, thinker: ModelConfig, frame: dict[str, Any],
        says: str) -> None:
    offline = await ModelConfig.objects.aget(model_id="confab-offline")
    sent = {"model": thinker.pk if frame.pop("thinker", False) else offline.pk, **frame}
    client, _ = await connect(alice, conversation.pk)
    error = await _configure(client, **sent)
    assert error["type"] == "error" and error["code"] == "invalid" and says in error["message"]
    assert error["refused"] == "configure"  # the page puts the server's settings back
    stored = await Conversation.objects.aget(pk=conversation.pk)
    assert (stored.model_id, stored.reasoning) == (None, {})
    assert not await ConversationEvent.objects.filter(conversation=conversation,
                                                      kind="settings_changed").aexists()
    await client.close()


async def test_a_disabled_model_cannot_be_chosen_and_a_chosen_one_falls_back(
        alice: User, conversation: Conversation, thinker: ModelConfig, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    client, _ = await connect(alice, conversation.pk)
    await _configure(client, model=thinker.pk, reasoning={"effort": "low"})
    await ModelConfig.objects.filter(pk=thinker.pk).aupdate(enabled=False)
    error = await _configure(client, model=thinker.pk, reasoning={})
    assert error["code"] == "invalid"
    await _reply(client, "a1", script({"text": "fallback"}))
    assert model_requests[-1]["model"] == "confab-offline"  # the team's model, not an error
    await client.close()


async def test_only_the_models_the_team_enabled_are_offered_and_may_be_chosen(
        alice: User, conversation: Conversation, thinker: ModelConfig, worker: None,
        model_requests: list[dict[str, Any]]) -> None:
    """Owners and admins choose which models members may pick (none ticked: every one); a
    choice the team later takes back falls back to the team's model."""
    offline = await ModelConfig.objects.aget(model_id="confab-offline")
    client, _ = await connect(alice, conversation.pk)
    await _configure(client, model=thinker.pk, reasoning={"effort": "low"})
    await client.close()
    config, _ = await TeamAIConfig.objects.aupdate_or_create(
        team_id=conversation.room.team_id, defaults={"default_model": offline})
    await config.chat_models.aset([offline])
    client, state = await connect(alice, conversation.pk)
    assert [m["id"] for m in state["models"]] == [offline.pk]
    assert state["conversation"]["settings"] == {"model": offline.pk, "reasoning": {}}
    error = await _configure(client, model=thinker.pk, reasoning={})
    assert error["code"] == "invalid"
    await _reply(client, "a1", script({"text": "the team's model"}))
    assert model_requests[-1]["model"] == "confab-offline"
    await client.close()


async def test_a_viewer_cannot_configure(carol: User, conversation: Conversation,
                                         thinker: ModelConfig) -> None:
    client, _ = await connect(carol, conversation.pk)
    error = await _configure(client, model=thinker.pk, reasoning={})
    assert (error["code"], error["refused"]) == ("forbidden", "configure")
    assert (await Conversation.objects.aget(pk=conversation.pk)).model_id is None
    await client.close()


@pytest.mark.parametrize("frame", [
    {"type": "configure", "model": "1", "reasoning": {}},
    {"type": "configure", "model": 1, "reasoning": {"effort": ["high"]}},
    {"type": "configure", "model": 1, "reasoning": {}, "extra": 1},
    {"type": "configure", "reasoning": {}},
])
async def test_a_malformed_configure_is_a_bad_frame(alice: User, conversation: Conversation,
                                                    frame: dict[str, Any]) -> None:
    client, _ = await connect(alice, conversation.pk)
    await client.send(frame)
    error = await client.until(lambda f: f["type"] == "error")
    assert (error["code"], error["refused"]) == ("bad_frame", "configure")
    await client.close()


@pytest.mark.parametrize("frame", [
    {"type": "nonsense"}, {"type": ["configure"]}, {"type": {"a": 1}}, ["configure"], "x"])
async def test_a_frame_of_no_known_type_is_refused_naming_none(
        alice: User, conversation: Conversation, frame: Any) -> None:
    client, _ = await connect(alice, conversation.pk)
    await client.send(frame)
    error = await client.until(lambda f: f["type"] == "error")
    assert error["code"] == "bad_frame" and "refused" not in error
    await client.close()


async def test_the_exports_say_what_each_run_used(
        alice: User, conversation: Conversation, thinker: ModelConfig, worker: None) -> None:
    client, _ = await connect(alice, conversation.pk)
    await _configure(client, model=thinker.pk, reasoning={"effort": "high"})
    await _reply(client, "a1", script({"text": "done"}))
    await client.close()
    http = AsyncClient()
    await http.aforce_login(alice)
    base = f"/api/conversations/{conversation.pk}"
    exported = json.loads(await _body(await http.get(f"{base}/export.json")))
    assert [(r["model"], r["reasoning"]) for r in exported["runs"]] == [
        ("confab-offline-thinking",
         {"effort": "high", "thinking_budget": 1024, "disable_context_caching": True})]
    markdown = (await _body(await http.get(f"{base}/export.md"))).decode()
    assert ('model `confab-offline-thinking` (`effort="high", thinking_budget=1024, '
            'disable_context_caching=true`)') in markdown
    rest = json.loads((await http.get(base)).content)
    assert rest["settings"] == {"model": thinker.pk, "reasoning": {"effort": "high"}}


async def _body(response: Any) -> bytes:
    return b"".join([piece async for piece in response.streaming_content])
