"""Where the models come from: ProviderConfig (a provider endpoint and its key), ModelConfig (a
model of it with its limits and controls), and each team's choice of default model."""

from __future__ import annotations

from django.db import models

from apps.accounts.models import Team
from apps.common.models import TimeStampedModel
from apps.integrations.crypto import EncryptedTextField


class ProviderKind(models.TextChoices):
    """The wire protocol (DESIGN 2.3); OpenAI-compatible vendors are "openai" + a profile."""

    ANTHROPIC = "anthropic", "Anthropic Messages"
    OPENAI = "openai", "OpenAI-compatible Chat Completions"
    GEMINI = "gemini", "Google Gemini"


class ProviderConfig(TimeStampedModel):
    """A provider endpoint, set up by site staff. ``base_url`` follows the vendor SDK's
    convention; ``profile`` names the OpenAI-compatible quirk profile (blank: from the host).
    ``api_key`` is encrypted at rest and write-only in the admin."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=ProviderKind.choices)
    profile = models.CharField(max_length=20, blank=True)
    base_url = models.URLField(max_length=500)
    api_key = EncryptedTextField(blank=True)
    enabled = models.BooleanField(default=True)

    def __str__(self) -> str:
        return self.name


class ModelConfig(TimeStampedModel):
    """A model of a provider. ``context_window`` and ``max_output_tokens`` (tokens) drive the
    context gauge and compaction; ``extend_params`` lists the reasoning controls the UI shows
    (names of ReasoningParams fields); ``default_reasoning`` is a ReasoningParams object."""

    provider = models.ForeignKey(ProviderConfig, on_delete=models.CASCADE, related_name="models")
    model_id = models.CharField(max_length=200)
    display_name = models.CharField(max_length=200, blank=True)
    context_window = models.PositiveIntegerField(default=200_000)
    max_output_tokens = models.PositiveIntegerField(default=8_192)
    extend_params = models.JSONField(default=list, blank=True)
    default_reasoning = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "model_id"],
                                               name="one_model_per_provider")]

    def __str__(self) -> str:
        return self.display_name or self.model_id


class TeamAIConfig(TimeStampedModel):
    """A team's choice of model (None: the site's first enabled model)."""

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="ai_config")
    default_model = models.ForeignKey(ModelConfig, null=True, blank=True,
                                      on_delete=models.SET_NULL, related_name="+")
