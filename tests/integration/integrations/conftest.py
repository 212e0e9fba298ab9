"""Providers and models for the integrations tests."""

from __future__ import annotations

import pytest

from apps.integrations.models import ModelConfig, ProviderConfig

API_KEY = "sk-test-0123456789abcdef-very-secret"


@pytest.fixture
def provider(db: None) -> ProviderConfig:
    """An OpenAI-compatible provider with a key (nothing listens at its URL)."""
    return ProviderConfig.objects.create(name="Vendor", kind="openai",
                                         base_url="https://llm.example.com/v1", api_key=API_KEY)


@pytest.fixture
def model(provider: ProviderConfig) -> ModelConfig:
    return ModelConfig.objects.create(provider=provider, model_id="vendor-large",
                                      context_window=128_000, max_output_tokens=16_000)
