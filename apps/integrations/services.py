"""Writes about providers, models and a team's AI settings.

Team settings (default model, tool policy, the agent's handle) are managed by the team's owners
and admins (``not_found`` for a non-member, ``forbidden`` for other members). Provider checks
are for site staff (the admin): they call the provider through the engine adapter and report the
outcome, with the error ``kind`` of DESIGN 2.3 on failure, and never the API key.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, replace

from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext, ngettext

from apps.accounts.models import Team, User
from apps.accounts.permissions import require_manager
from apps.common.errors import ApplicationError, ErrorCode
from apps.engine.errors import ProviderError
from apps.engine.providers import provider_class
from apps.engine.providers.base import ModelInfo, ProviderSettings
from apps.integrations.builders import provider_settings
from apps.integrations.crypto import DecryptionError
from apps.integrations.models import ModelConfig, ProviderConfig, TeamAIConfig
from apps.integrations.policy import clean_tool_policy

__all__ = [
    "ConnectionReport",
    "FetchReport",
    "provider_fetch_models",
    "provider_test_connection",
    "team_set_agent_handle",
    "team_set_default_model",
    "team_set_tool_policy",
]

# An admin page waits for these checks: fail fast instead of a run's patient timeouts.
CHECK_CONNECT_TIMEOUT_S = 5.0
CHECK_READ_TIMEOUT_S = 15.0
_MESSAGE_CHARS = 300


# -- a team's settings -----------------------------------------------------------------------
@transaction.atomic
def team_set_default_model(*, team: Team, model: ModelConfig | None, by: User,
                           chat_models: Iterable[ModelConfig] | None = None) -> TeamAIConfig:
    """Make ``model`` the team's default (None: back to the site's first enabled model) and,
    when given, ``chat_models`` the models its members may choose per conversation (empty:
    every enabled one; see :func:`apps.integrations.builders.team_models`).

    Errors: ``not_found``/``forbidden`` (not a manager of the team); ``invalid`` when a model
    or its provider is disabled (nothing is saved then).
    """
    require_manager(by, team)
    chosen = list(chat_models) if chat_models is not None else None
    for candidate in ([model] if model is not None else []) + (chosen or []):
        if not ModelConfig.objects.filter(pk=candidate.pk, enabled=True,
                                          provider__enabled=True).exists():
            raise ApplicationError(
                ErrorCode.INVALID, gettext("The model %(model)s is not available.")
                                   % {"model": candidate})
    config, _ = TeamAIConfig.objects.update_or_create(team=team,
                                                      defaults={"default_model": model})
    if chosen is not None:
        config.chat_models.set(chosen)
    return config


def team_set_agent_handle(*, team: Team, handle: str, by: User) -> Team:
    """Name the team's agent: ``@<handle>`` calls it in a ``mention`` conversation
    (``@agent`` always does too). Errors: ``not_found``/``forbidden`` (not a manager);
    ``invalid`` for a handle that is not 1-30 letters (of any script), digits, ``_`` or ``-``
    (``validate_agent_handle``). A leading ``@`` or ``＠`` is dropped; the handle is kept in
    NFC, as mentions are compared."""
    require_manager(by, team)
    handle = unicodedata.normalize("NFC", handle.strip())
    team.agent_handle = handle[1:] if handle[:1] in ("@", "＠") else handle
    try:
        team.clean_fields(exclude=[f.name for f in Team._meta.fields if f.name != "agent_handle"])
    except ValidationError as exc:
        raise ApplicationError(ErrorCode.INVALID, " ".join(exc.messages)) from None
    team.save(update_fields=["agent_handle", "updated_at"])
    return team


@transaction.atomic
def team_set_tool_policy(
    *, team: Team, require: list[str], exempt: list[str], by: User
) -> dict[str, list[str]]:
    """Replace the team's tool policy (semantics in ``apps.integrations.policy``); returns
    what was stored. Errors: ``not_found``/``forbidden`` (not a manager); ``invalid`` (see
    :func:`~apps.integrations.policy.clean_tool_policy`)."""
    require_manager(by, team)
    policy = clean_tool_policy(require=require, exempt=exempt)
    team.tool_policy = policy
    team.save(update_fields=["tool_policy", "updated_at"])
    return policy


# -- provider checks (site staff) -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ConnectionReport:
    """How a call to a provider went: ``ok``; on failure ``kind`` (a ProviderError kind, or
    "invalid_response" for an answer that is not a model list) and ``message`` (the key
    redacted); ``models``: how many models it listed."""

    ok: bool
    message: str
    kind: str | None = None
    models: int = 0


@dataclass(frozen=True, slots=True)
class FetchReport:
    """What "fetch models" did: rows ``created`` and ``updated``; ``failure`` is set when the
    provider could not be asked, in which case the adapter's built-in list (``fallback``
    models, possibly none) was used instead (DESIGN 2.3)."""

    created: int
    updated: int
    failure: ConnectionReport | None = None
    fallback: int = 0


def provider_test_connection(*, config: ProviderConfig) -> ConnectionReport:
    """List ``config``'s models through its engine adapter. ``invalid`` (ApplicationError) for a
    configuration the engine cannot use (unknown kind or profile)."""
    models, failure = async_to_sync(_list_models)(_check_settings(config), fallback=False)
    if failure is not None:
        return failure
    return ConnectionReport(ok=True, models=len(models),
                            message=ngettext("connected; the provider lists %(count)d model.",
                                             "connected; the provider lists %(count)d models.",
                                             len(models)) % {"count": len(models)})


def provider_fetch_models(*, config: ProviderConfig) -> FetchReport:
    """Create or update ``config``'s ModelConfig rows from the provider's model list.

    New models are created enabled, with the context window and output cap when the provider
    gives them (else the field defaults). Existing rows get the provider's limits when it gives
    them and its display name only where none was set; ``enabled``, ``extend_params`` and
    ``default_reasoning`` are staff choices and left alone, as are rows the list no longer has.
    """
    models, failure = async_to_sync(_list_models)(_check_settings(config), fallback=True)
    created, updated = _upsert_models(config, models)
    return FetchReport(created=created, updated=updated, failure=failure,
                       fallback=len(models) if failure else 0)


def _check_settings(config: ProviderConfig) -> ProviderSettings:
    """``config``'s settings with the checks' short timeouts; ``invalid`` also when no
    configured key decrypts its stored API key (the admin enters it again)."""
    try:
        settings = provider_settings(config)
    except DecryptionError:
        raise ApplicationError(ErrorCode.INVALID, gettext(
            "Its stored API key cannot be decrypted with CONFAB_FERNET_KEYS (was a key removed "
            "before rotate_secrets ran?): enter the key again.")) from None
    return replace(settings, connect_timeout_s=CHECK_CONNECT_TIMEOUT_S,
                   read_timeout_s=CHECK_READ_TIMEOUT_S)


async def _list_models(
    settings: ProviderSettings, *, fallback: bool
) -> tuple[list[ModelInfo], ConnectionReport | None]:
    """The provider's models and None, or (the built-in list when ``fallback``, else []) and
    the failure. ``fetch_models`` and not ``list_models``: the latter hides failures."""
    provider = provider_class(settings.protocol)(settings)
    try:
        try:
            return await provider.fetch_models(), None
        except ProviderError as exc:
            failure = _failure(str(exc.kind), exc.message, settings.api_key)
        except (ValueError, KeyError, TypeError) as exc:  # not JSON, or not a model list
            failure = _failure("invalid_response", "the answer is not a model list "
                               f"({type(exc).__name__}).", settings.api_key)
        return (list(provider.DEFAULT_MODELS) if fallback else []), failure
    finally:
        await provider.aclose()


def _failure(kind: str, message: str, api_key: str | None) -> ConnectionReport:
    # Some providers quote the key they refused (in part or in full): never pass it on.
    if api_key:
        message = message.replace(api_key, "[redacted]")
    if len(message) > _MESSAGE_CHARS:
        message = message[:_MESSAGE_CHARS] + "…"
    return ConnectionReport(ok=False, kind=kind, message=gettext("failed (%(kind)s): %(message)s")
                            % {"kind": kind, "message": message})


@transaction.atomic
def _upsert_models(config: ProviderConfig, models: list[ModelInfo]) -> tuple[int, int]:
    existing = {row.model_id: row for row in config.models.all()}
    max_id = ModelConfig._meta.get_field("model_id").max_length
    created = updated = 0
    for info in models:
        if len(info.id) > max_id:
            continue
        row = existing.get(info.id)
        if row is None:
            existing[info.id] = _create_model(config, info)
            created += 1
        elif _refresh_model(row, info):
            updated += 1
    return created, updated


def _create_model(config: ProviderConfig, info: ModelInfo) -> ModelConfig:
    known = {"context_window": info.context_window, "max_output_tokens": info.max_output_tokens}
    return ModelConfig.objects.create(
        provider=config, model_id=info.id, display_name=info.display_name or "",
        **{field: value for field, value in known.items() if value},
    )


def _refresh_model(row: ModelConfig, info: ModelInfo) -> bool:
    changed: list[str] = []
    for field, value in (("context_window", info.context_window),
                         ("max_output_tokens", info.max_output_tokens)):
        if value and getattr(row, field) != value:
            setattr(row, field, value)
            changed.append(field)
    if info.display_name and not row.display_name:
        row.display_name = info.display_name
        changed.append("display_name")
    if changed:
        row.save(update_fields=[*changed, "updated_at"])
    return bool(changed)
