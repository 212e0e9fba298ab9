"""Rows to engine objects: settings, the provider pool, a team's model, a run's settings."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import Team
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.errors import ProviderError
from apps.engine.messages import ReasoningParams
from apps.engine.providers.base import ProviderSettings
from apps.engine.providers.openai_compat import OpenAICompatProvider
from apps.engine.providers.retry import RetryingProvider
from apps.engine.runtime.runner import RunConfig
from apps.integrations.builders import (
    TEAM_CHOICE,
    ProviderPool,
    model_for_team,
    provider_settings,
    run_settings,
)
from apps.integrations.models import ModelConfig, ProviderConfig, TeamAIConfig
from tests.integration.fakellm_server import serve_fakellm
from tests.integration.integrations.conftest import API_KEY

pytestmark = pytest.mark.django_db


def test_provider_settings_carry_the_decrypted_key(provider: ProviderConfig) -> None:
    provider.refresh_from_db()
    assert provider_settings(provider) == ProviderSettings(
        protocol="openai", base_url="https://llm.example.com/v1", api_key=API_KEY, profile=None)


def test_the_read_timeout_is_the_setting(provider: ProviderConfig, settings) -> None:
    settings.CONFAB = {**settings.CONFAB, "PROVIDER_READ_TIMEOUT_S": 2.5}
    assert provider_settings(provider).read_timeout_s == 2.5


def test_blank_key_and_profile_become_none(db: None) -> None:
    config = ProviderConfig.objects.create(name="Local", kind="openai", profile="vllm",
                                           base_url="http://127.0.0.1:8000/v1")
    settings = provider_settings(config)
    assert (settings.api_key, settings.profile) == (None, "vllm")


@pytest.mark.parametrize(("kind", "profile", "words"), [
    ("openai", "nonsense", "Unknown profile"),
    ("anthropic", "deepseek", "only to OpenAI-compatible"),
    ("cohere", "", "Unknown provider kind"),
])
def test_a_configuration_the_engine_cannot_use_is_invalid(
    db: None, kind: str, profile: str, words: str
) -> None:
    config = ProviderConfig(name="Bad", kind=kind, profile=profile, base_url="https://x.test")
    with pytest.raises(ApplicationError) as caught:
        provider_settings(config)
    assert caught.value.code is ErrorCode.INVALID and words in caught.value.message


# -- the pool -----------------------------------------------------------------------------------
SETTINGS = ProviderSettings(protocol="openai", base_url="https://llm.example.com/v1",
                            api_key="k1")


async def test_the_pool_keeps_one_retrying_provider_per_settings() -> None:
    pool = ProviderPool()
    first = pool.get(SETTINGS)
    assert isinstance(first, RetryingProvider)
    assert isinstance(first.inner, OpenAICompatProvider)
    assert pool.get(ProviderSettings(protocol="openai", base_url="https://llm.example.com/v1",
                                     api_key="k1")) is first
    other = pool.get(ProviderSettings(protocol="openai", base_url="https://llm.example.com/v1",
                                      api_key="k2"))
    assert other is not first
    await pool.aclose_all()
    assert first.inner._client.is_closed and other.inner._client.is_closed
    assert pool.get(SETTINGS) is not first  # closed providers are forgotten
    await pool.aclose_all()


def test_each_event_loop_gets_its_own_provider() -> None:
    pool = ProviderPool()

    async def get_and_keep() -> RetryingProvider:
        provider = pool.get(SETTINGS)
        assert pool.get(SETTINGS) is provider
        return provider

    first, second = asyncio.run(get_and_keep()), asyncio.run(get_and_keep())
    assert first is not second  # a client never crosses into a loop it was not made in


def test_the_providers_of_an_ended_loop_are_dropped() -> None:
    pool = ProviderPool()
    origin = "http://127.0.0.1:9"  # nothing answers: the request still makes the session

    async def used() -> asyncio.AbstractEventLoop:
        provider = pool.get(ProviderSettings(protocol="anthropic", base_url=origin))
        with contextlib.suppress(ProviderError):
            await provider.inner.fetch_models()
        return asyncio.get_running_loop()

    ended = asyncio.run(used())  # its provider's session refers to the loop, never closed
    later = asyncio.run(used())
    assert list(pool._by_loop) == [later] and ended is not later


def test_the_pool_refuses_to_work_outside_an_event_loop() -> None:
    with pytest.raises(RuntimeError):
        ProviderPool().get(SETTINGS)


async def test_a_pooled_provider_talks_to_a_real_server() -> None:
    pool = ProviderPool()
    async with serve_fakellm() as origin:
        provider = pool.get(ProviderSettings(protocol="anthropic", base_url=origin))
        models = await provider.list_models()
        await pool.aclose_all()
    assert [m.id for m in models] == ["confab-offline"]


# -- a team's model, a run's settings -------------------------------------------------------------
def test_a_disabled_choice_falls_back_to_the_first_enabled_model(
    acme: Team, globex: Team, provider: ProviderConfig, model: ModelConfig
) -> None:
    chosen = ModelConfig.objects.create(provider=provider, model_id="vendor-small")
    TeamAIConfig.objects.create(team=globex, default_model=chosen)
    assert model_for_team(acme) == model  # another team's choice is not Acme's
    TeamAIConfig.objects.create(team=acme, default_model=chosen)
    assert model_for_team(acme) == chosen
    ModelConfig.objects.filter(pk=chosen.pk).update(enabled=False)
    assert model_for_team(acme) == model
    ProviderConfig.objects.filter(pk=provider.pk).update(enabled=False)
    assert model_for_team(acme) is None


def test_a_team_loaded_with_its_choice_answers_alike_without_a_query_while_it_is_usable(
    acme: Team, provider: ProviderConfig, model: ModelConfig
) -> None:
    def asked(team: Team) -> tuple[ModelConfig | None, int]:
        """The model for the team read now with its choice, and the queries that took."""
        loaded = Team.objects.select_related(TEAM_CHOICE).get(pk=team.pk)
        with CaptureQueriesContext(connection) as queries:
            found = model_for_team(loaded, loaded=True)
        return found, len(queries)

    assert asked(acme) == (model, 1)  # no AI config at all: the first enabled model
    chosen = ModelConfig.objects.create(provider=provider, model_id="vendor-small")
    config = TeamAIConfig.objects.create(team=acme)
    assert asked(acme) == (model, 1)  # no choice
    config.default_model = chosen
    config.save()
    found, queries = asked(acme)
    assert (found, queries) == (chosen, 0) and found.provider == provider
    ModelConfig.objects.filter(pk=chosen.pk).update(enabled=False)
    assert asked(acme) == (model, 1)
    ModelConfig.objects.filter(pk=chosen.pk).update(enabled=True)
    ProviderConfig.objects.filter(pk=provider.pk).update(enabled=False)
    assert asked(acme) == (None, 1)


def test_a_team_held_since_before_a_change_is_not_taken_at_its_word(
    acme: Team, provider: ProviderConfig, model: ModelConfig
) -> None:
    chosen = ModelConfig.objects.create(provider=provider, model_id="vendor-small")
    TeamAIConfig.objects.create(team=acme, default_model=chosen)  # cached on acme
    ModelConfig.objects.filter(pk=chosen.pk).update(enabled=False)
    assert acme.ai_config.default_model.enabled  # what the held Team still says
    assert model_for_team(acme) == model


def test_run_settings_fill_a_run_config(model: ModelConfig) -> None:
    model.default_reasoning = {"effort": "high", "thinking_budget": 4096}
    settings = run_settings(model)
    assert settings == {"model": "vendor-large", "context_window": 128_000, "max_tokens": 16_000,
                        "reasoning": ReasoningParams(effort="high", thinking_budget=4096),
                        "server_tools": ()}
    assert RunConfig(**settings, system="You help.").max_tokens == 16_000


def test_no_default_reasoning_means_none(model: ModelConfig) -> None:
    assert run_settings(model)["reasoning"] is None


@pytest.mark.parametrize("reasoning", [{"effort": "extreme"}, {"no_such_control": True},
                                       {"thinking_budget": -1}])
def test_a_bad_stored_default_reasoning_is_invalid(model: ModelConfig, reasoning: dict) -> None:
    model.default_reasoning = reasoning
    with pytest.raises(ApplicationError) as caught:
        run_settings(model)
    assert caught.value.code is ErrorCode.INVALID
