"""Anthropic Messages API adapter (https://platform.claude.com/docs/en/api/messages).

The three seams of :class:`~apps.engine.providers.base.HttpProvider`, one module each:

- :mod:`.request` maps a ChatRequest to the body (:func:`build_body`), with the history
  serializer in :mod:`.history`;
- :mod:`.stream` translates the SSE stream (:class:`AnthropicTranslator`);
- :func:`classify_anthropic_error` (here) classifies HTTP error bodies with the shared
  classifier, plus Anthropic's rate-limit reset headers.

:class:`AnthropicProvider` adds the URL and headers, and the model list.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urlencode

from apps.engine.errors import ErrorKind, ProviderError
from apps.engine.messages import ChatRequest
from apps.engine.providers.anthropic.request import DEFAULT_MAX_TOKENS, build_body
from apps.engine.providers.anthropic.stream import AnthropicTranslator, normalize_usage
from apps.engine.providers.base import HttpCall, HttpProvider, ModelInfo
from apps.engine.providers.classify import classify_error

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "AnthropicProvider",
    "AnthropicTranslator",
    "build_body",
    "classify_anthropic_error",
    "normalize_usage",
]

PROTOCOL = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
# https://platform.claude.com/docs/en/api/versioning: the one stable version header value.
ANTHROPIC_VERSION = "2023-06-01"


# -- errors ----------------------------------------------------------------------------------


def classify_anthropic_error(
    body: bytes | str | Any,
    *,
    status: int | None,
    headers: Mapping[str, str] | None = None,
    now: float | None = None,
) -> ProviderError:
    """Classify an Anthropic HTTP error (https://platform.claude.com/docs/en/api/errors).

    The shared classifier reads ``error.type`` (529 ``overloaded_error`` -> overloaded, 429
    ``rate_limit_error`` -> rate_limited, "prompt is too long" -> context_length_exceeded) and
    ``retry-after``. A 429 without ``retry-after`` falls back to the latest
    ``anthropic-ratelimit-*-reset`` time (RFC 3339) of a limit with nothing remaining
    (https://platform.claude.com/docs/en/api/rate-limits). ``now``: Unix time, for tests.
    """
    error = classify_error(body, provider=PROTOCOL, status=status, headers=headers, now=now)
    if error.retry_after_s is None and error.kind is ErrorKind.RATE_LIMITED and headers:
        error.retry_after_s = _ratelimit_reset_delay(headers, now)
    return error


def _ratelimit_reset_delay(headers: Mapping[str, str], now: float | None) -> float | None:
    lower = {k.lower(): v for k, v in headers.items()}
    resets: list[float] = []
    for name, value in lower.items():
        if not (name.startswith("anthropic-ratelimit-") and name.endswith("-reset")):
            continue
        remaining = lower.get(name.removesuffix("-reset") + "-remaining")
        if remaining is not None and remaining.strip() != "0":
            continue
        try:
            resets.append(datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp())
        except ValueError:
            continue
    if not resets:
        return None
    return max(max(resets) - (time.time() if now is None else now), 0.0)


# -- the provider ----------------------------------------------------------------------------


def _model(model_id: str, name: str, context: int, output: int) -> ModelInfo:
    return ModelInfo(model_id, display_name=name, context_window=context, max_output_tokens=output)


class AnthropicProvider(HttpProvider):
    """The Anthropic Messages adapter over httpx2.

    ``settings.base_url`` has no version (``https://api.anthropic.com``; the adapter adds
    ``/v1/messages``), as the Anthropic SDKs expect. ``settings.headers`` are added last (for
    example ``anthropic-beta``), so a gateway may also replace the auth header.
    """

    protocol: ClassVar[str] = PROTOCOL
    # Built-in list for when GET /v1/models fails, from the models overview
    # (https://platform.claude.com/docs/en/about-claude/models/overview), November 2026.
    DEFAULT_MODELS: ClassVar[tuple[ModelInfo, ...]] = (
        _model("claude-opus-5-5", "Claude Opus 5.5", 1_000_000, 128_000),
        _model("claude-sonnet-5-5", "Claude Sonnet 5.5", 1_000_000, 128_000),
        _model("claude-haiku-5-5", "Claude Haiku 5.5", 1_000_000, 128_000),
        _model("claude-fable-5-2", "Claude Fable 5.2", 1_000_000, 128_000),
        _model("claude-opus-5", "Claude Opus 5", 1_000_000, 128_000),
        _model("claude-sonnet-5", "Claude Sonnet 5", 1_000_000, 128_000),
        _model("claude-haiku-4-5-20251001", "Claude Haiku 4.5", 200_000, 64_000),
        _model("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", 200_000, 64_000),
    )
    MAX_MODEL_PAGES: ClassVar[int] = 20

    def build_call(self, request: ChatRequest) -> HttpCall:
        """``POST {base_url}/v1/messages`` with the JSON body of :func:`build_body`."""
        headers = {**self._headers(), "content-type": "application/json",
                   "accept": "text/event-stream"}
        headers.update(self.settings.headers)  # (name, value) pairs
        return HttpCall(self._url("/v1/messages"), headers, build_body(request))

    def new_translator(self) -> AnthropicTranslator:
        """A fresh :class:`AnthropicTranslator`."""
        return AnthropicTranslator()

    def classify_error(
        self, body: bytes, *, status: int | None, headers: Mapping[str, str]
    ) -> ProviderError:
        """See :func:`classify_anthropic_error`."""
        return classify_anthropic_error(body, status=status, headers=headers)

    async def fetch_models(self) -> list[ModelInfo]:
        """``GET /v1/models`` page by page (https://platform.claude.com/docs/en/api/models/list):
        ``max_input_tokens`` -> context_window, ``max_tokens`` -> max_output_tokens."""
        headers = {**self._headers(), **dict(self.settings.headers)}
        models: list[ModelInfo] = []
        query: dict[str, str] = {"limit": "1000"}
        for _ in range(self.MAX_MODEL_PAGES):
            page = await self.get_json(f"{self._url('/v1/models')}?{urlencode(query)}", headers)
            models.extend(_model_info(item) for item in page["data"])
            if not page.get("has_more") or not page.get("last_id"):
                break
            query["after_id"] = str(page["last_id"])
        return models

    def _url(self, path: str) -> str:
        return self.settings.base_url.rstrip("/") + path

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self.settings.api_key:
            headers["x-api-key"] = self.settings.api_key
        return headers


def _model_info(item: dict[str, Any]) -> ModelInfo:
    known = {m.id: m for m in AnthropicProvider.DEFAULT_MODELS}.get(item["id"])
    return ModelInfo(
        id=item["id"],
        display_name=item.get("display_name") or (known.display_name if known else None),
        context_window=item.get("max_input_tokens") or (known.context_window if known else None),
        max_output_tokens=item.get("max_tokens") or (known.max_output_tokens if known else None),
    )
