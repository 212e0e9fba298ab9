"""The demo's models: the offline scripted model (always) and one real provider per API key
found in the environment."""

from __future__ import annotations

import os

from apps.accounts.models import Team
from apps.engine.providers import provider_class
from apps.engine.providers.base import ModelInfo
from apps.engine.providers.profiles import profile_for
from apps.integrations.models import ModelConfig, ProviderConfig, TeamAIConfig

__all__ = ["OFFLINE_MODEL", "ensure_demo_models"]

OFFLINE_MODEL = "confab-offline"
DEFAULT_FAKELLM_URL = "http://127.0.0.1:8001"

# env var of the key -> (provider name, kind, profile, base URL, base URL env override)
REAL_PROVIDERS = (
    ("ANTHROPIC_API_KEY", "Anthropic", "anthropic", "", "https://api.anthropic.com", None),
    ("OPENAI_API_KEY", "OpenAI", "openai", "", "https://api.openai.com/v1", "OPENAI_BASE_URL"),
    ("GEMINI_API_KEY", "Google Gemini", "gemini", "",
     "https://generativelanguage.googleapis.com", None),
    ("DEEPSEEK_API_KEY", "DeepSeek", "openai", "deepseek", "https://api.deepseek.com/v1", None),
)


def _provider(name: str, kind: str, profile: str, base_url: str, key: str) -> ProviderConfig:
    provider, _ = ProviderConfig.objects.update_or_create(
        name=name, defaults={"kind": kind, "profile": profile, "base_url": base_url,
                             "enabled": True})
    if key and provider.api_key != key:
        provider.api_key = key
        provider.save(update_fields=["api_key"])
    return provider


def _builtin_models(provider: ProviderConfig) -> tuple[ModelInfo, ...]:
    """The adapter's built-in list (per profile for OpenAI-compatible providers)."""
    if provider.kind == "openai":
        return profile_for(provider.profile or None, provider.base_url).default_models
    return provider_class(provider.kind).DEFAULT_MODELS


def _default_models(provider: ProviderConfig) -> None:
    """The built-in model list (a real list can be fetched in the admin)."""
    for info in _builtin_models(provider)[:3]:
        ModelConfig.objects.get_or_create(provider=provider, model_id=info.id, defaults={
            "display_name": info.display_name or info.id,
            "context_window": info.context_window or 200_000,
            "max_output_tokens": info.max_output_tokens or 8_192})


def ensure_demo_models(team: Team, *, fakellm_url: str | None) -> ModelConfig:
    """Create or refresh the demo providers. ``fakellm_url``: where the offline model listens
    (None: keep the stored address, or the default for a new one). The offline model becomes
    the team's default unless the team already chose one."""
    name = "Offline scripted model (fakellm)"
    stored = ProviderConfig.objects.filter(name=name).values_list("base_url", flat=True).first()
    url = fakellm_url or stored or DEFAULT_FAKELLM_URL
    offline_provider = _provider(name, "anthropic", "", url.rstrip("/"), "")
    offline, _ = ModelConfig.objects.update_or_create(
        provider=offline_provider, model_id=OFFLINE_MODEL,
        defaults={"display_name": "Offline scripted model", "context_window": 200_000,
                  "max_output_tokens": 8_192, "enabled": True})
    for env, name, kind, profile, base_url, base_env in REAL_PROVIDERS:
        key = os.environ.get(env, "")
        if key:
            url = (os.environ.get(base_env) if base_env else None) or base_url
            _default_models(_provider(name, kind, profile, url, key))
    choice, _ = TeamAIConfig.objects.get_or_create(team=team,
                                                   defaults={"default_model": offline})
    if choice.default_model_id is None:
        choice.default_model = offline
        choice.save(update_fields=["default_model"])
    return offline
