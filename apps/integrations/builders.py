"""Rows to engine objects: provider settings, the shared provider pool, a team's model and the
settings of a run.

The pool keeps ONE engine provider per :class:`ProviderSettings` (so one connection pool per
endpoint and key, shared by every run of the process), each wrapped in ``RetryingProvider``. A
changed configuration (new key, new URL) is a different ``ProviderSettings`` and gets its own
provider; the old one's idle connections close by themselves after the transport's keep-alive
expiry, and :meth:`ProviderPool.aclose_all` closes the rest at shutdown.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db.models import Exists, F, OuterRef, QuerySet
from django.utils.translation import gettext as _
from pydantic import ValidationError

from apps.accounts.models import Team
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.messages import ReasoningParams
from apps.engine.providers import PROTOCOLS, provider_class
from apps.engine.providers.base import ProviderSettings
from apps.engine.providers.profiles import PROFILES, profile_for
from apps.engine.providers.retry import RetryingProvider
from apps.integrations.models import ModelConfig, ProviderConfig, TeamAIConfig

__all__ = [
    "TEAM_CHOICE",
    "ProviderPool",
    "model_for_team",
    "model_reads_images",
    "provider_for",
    "provider_pool",
    "provider_settings",
    "reasoning_params",
    "run_settings",
    "team_models",
    "usable_models",
    "validate_provider",
]


def validate_provider(*, kind: str, profile: str) -> None:
    """Refuse (``invalid``) a kind the engine has no adapter for, or a profile that is not an
    OpenAI-compatible profile of the engine (profiles exist only for ``openai``)."""
    if kind not in PROTOCOLS:
        raise ApplicationError(ErrorCode.INVALID, _("Unknown provider kind %(kind)r.")
                               % {"kind": kind})
    if profile and kind != "openai":
        raise ApplicationError(ErrorCode.INVALID,
                               _("A profile applies only to OpenAI-compatible providers."))
    if profile and profile not in PROFILES:
        raise ApplicationError(ErrorCode.INVALID, _(
            "Unknown profile %(profile)r; expected one of %(profiles)s (or blank: from the URL).")
            % {"profile": profile, "profiles": ", ".join(sorted(PROFILES))})


def provider_settings(config: ProviderConfig) -> ProviderSettings:
    """The engine's settings for ``config`` (the key decrypted; the read timeout from
    ``CONFAB["PROVIDER_READ_TIMEOUT_S"]``); ``invalid`` as :func:`validate_provider` says."""
    validate_provider(kind=config.kind, profile=config.profile)
    return ProviderSettings(protocol=config.kind, base_url=config.base_url,
                            api_key=config.api_key or None, profile=config.profile or None,
                            read_timeout_s=settings.CONFAB["PROVIDER_READ_TIMEOUT_S"])


class ProviderPool:
    """One ``RetryingProvider`` per ProviderSettings and event loop.

    An httpx client belongs to the event loop its connections were opened in, so providers are
    kept per loop; a server process has one loop, so in practice one provider per settings.
    Thread-safe; :meth:`get` must be called inside a running loop.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[ProviderSettings, RetryingProvider]
        ] = weakref.WeakKeyDictionary()

    def get(self, settings: ProviderSettings) -> RetryingProvider:
        """The shared provider for ``settings``, made on first use."""
        loop = asyncio.get_running_loop()
        with self._lock:
            for ended in [other for other in self._by_loop if other.is_closed()]:
                del self._by_loop[ended]  # its providers' sessions hold it: not a weak key then
            providers = self._by_loop.setdefault(loop, {})
            provider = providers.get(settings)
            if provider is None:
                provider = RetryingProvider(provider_class(settings.protocol)(settings))
                providers[settings] = provider
            return provider

    async def aclose_all(self) -> None:
        """Close and forget every provider of the running loop (at shutdown)."""
        with self._lock:
            providers = self._by_loop.pop(asyncio.get_running_loop(), {})
        for provider in providers.values():
            await provider.aclose()


provider_pool = ProviderPool()
"""The process-wide pool."""


def provider_for(config: ProviderConfig) -> RetryingProvider:
    """The pooled provider for ``config`` (call inside the event loop that will use it)."""
    return provider_pool.get(provider_settings(config))


def usable_models() -> QuerySet[ModelConfig]:
    """The models a run may use: enabled, of an enabled provider (site staff's choice)."""
    return ModelConfig.objects.filter(enabled=True, provider__enabled=True)


def team_models(team: Team) -> QuerySet[ModelConfig]:
    """The usable models the team's members may choose for a conversation: those its owners
    and admins enabled (``TeamAIConfig.chat_models``), or every usable one when they chose
    none. The model the team's runs use by default (:func:`model_for_team`: its choice, or the
    site's first) is always among them."""
    usable = usable_models()
    chosen = [pk for pk in TeamAIConfig.objects.filter(team=team)
              .values_list("chat_models", flat=True) if pk is not None]
    if not chosen:
        return usable
    default = model_for_team(team)
    return usable.filter(pk__in=chosen + ([default.pk] if default else []))


TEAM_CHOICE = "ai_config__default_model__provider"
"""What ``select_related`` loads with a team for :func:`model_for_team` ``(team,
loaded=True)``: the team's choice and its provider (a run's setup loads them with the run)."""


def model_for_team(team: Team, *, loaded: bool = False) -> ModelConfig | None:
    """The model a run of ``team`` uses: the team's choice while it (and its provider) is
    enabled, else the first enabled model of an enabled provider, else None. The provider is
    loaded with it (``select_related``). One query, the choice sorted first: every run's
    setup asks, and a team without a choice cost two. ``loaded``: ``team`` was read just now
    with :data:`TEAM_CHOICE`, so a usable choice is taken from it, without a query (a caller
    holding an older Team asks the database: a choice changed or disabled since must count)."""
    if loaded and (choice := _usable_choice(team)) is not None:
        return choice
    chosen = Exists(TeamAIConfig.objects.filter(team=team, default_model=OuterRef("pk")))
    return (usable_models().select_related("provider").alias(chosen=chosen)
            .order_by(F("chosen").desc(), "pk").first())


def _usable_choice(team: Team) -> ModelConfig | None:
    """The team's chosen model, loaded with it (:data:`TEAM_CHOICE`), when :func:`usable_models`
    would find it; else None."""
    config = getattr(team, "ai_config", None)  # a RelatedObjectDoesNotExist: no AI config
    model = config.default_model if config is not None else None
    return model if model is not None and model.enabled and model.provider.enabled else None


def model_reads_images(model: ModelConfig) -> bool:
    """Whether requests to ``model`` may carry images: its ``supports_vision``, and for an
    OpenAI-compatible server its profile's ``accepts_images`` (DeepSeek takes none)."""
    if not model.supports_vision:
        return False
    provider = model.provider
    if provider.kind != "openai":
        return True
    try:
        return profile_for(provider.profile or None, provider.base_url).accepts_images
    except ValueError:  # an unknown profile: validate_provider refuses the run itself
        return True


def reasoning_params(data: Any, *, what: str = "default reasoning",
                     strict: bool = False) -> ReasoningParams | None:
    """``data`` (a ModelConfig's ``default_reasoning``, or ``what`` else) as ReasoningParams
    (None when empty); ``invalid`` naming ``what`` when it does not fit ReasoningParams.
    ``strict``: no coercion (``"yes"`` is not a switch, ``"500"`` not a budget)."""
    if not data:
        return None
    try:
        return ReasoningParams.model_validate(data, strict=strict)
    except ValidationError as exc:
        raise ApplicationError(ErrorCode.INVALID,
                               _("Invalid %(what)s: %(error)s.")
                               % {"what": what, "error": _first_error(exc)}) from None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "value"
    return f"{where}: {error['msg']}"


def run_settings(model: ModelConfig, chosen: Mapping[str, Any] | None = None
                 ) -> dict[str, Any]:
    """The model part of a run's ``RunConfig``: ``{"model": id, "context_window": tokens,
    "max_tokens": tokens, "reasoning": ReasoningParams | None, "server_tools": names}`` (so
    ``RunConfig(**run_settings(model), system=...)``). ``enabled_search`` turns on the
    provider's own web search: ``server_tools`` ``("web_search",)``, which the Anthropic
    adapter sends as its ``web_search`` server tool and the Gemini one as ``google_search``
    (the OpenAI-compatible one reads ``enabled_search`` itself: Qwen's ``enable_search``,
    OpenRouter's web plugin). ``chosen``: ReasoningParams fields a
    conversation set, over the model's ``default_reasoning``; only the fields the model still
    declares in ``extend_params`` count (the admin may have withdrawn a control since).
    ``invalid`` when the result does not fit ReasoningParams."""
    declared = set(model.extend_params or [])
    merged = {**(model.default_reasoning or {}),
              **{k: v for k, v in (chosen or {}).items() if k in declared}}
    reasoning = reasoning_params(merged)
    return {
        "model": model.model_id,
        "context_window": model.context_window,
        "max_tokens": model.max_output_tokens,
        "reasoning": reasoning,
        "server_tools": ("web_search",) if reasoning and reasoning.enabled_search else (),
    }
