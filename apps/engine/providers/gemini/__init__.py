"""The Google Gemini adapter: ``streamGenerateContent?alt=sse`` over httpx2 (DESIGN 2.3).

The three seams of :class:`~apps.engine.providers.base.HttpProvider`:

- request: :func:`~apps.engine.providers.gemini.request.build_body` (contents, system
  instruction, tools with converted schemas, thinking config) sent to
  ``{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the key in the
  ``x-goog-api-key`` header
  (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent);
- stream: :class:`~apps.engine.providers.gemini.stream.GeminiTranslator`;
- errors: the shared classifier (``error.status``, ``RetryInfo.retryDelay``, the
  "input token count ... exceeds" overflow wording).

The base URL follows the Google SDKs: no version (``https://generativelanguage.googleapis.com``);
a trailing ``/v1beta`` or ``/v1`` is tolerated and removed.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import quote, urlencode

from apps.engine.messages import ChatRequest
from apps.engine.providers.base import HttpCall, HttpProvider, ModelInfo
from apps.engine.providers.gemini.request import build_body
from apps.engine.providers.gemini.stream import GeminiTranslator

__all__ = ["DEFAULT_BASE_URL", "GeminiProvider", "GeminiTranslator"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
MAX_MODEL_PAGES = 20  # a guard against a server that keeps returning page tokens

_M = 1_048_576
_DEFAULT_MODELS = (
    # https://ai.google.dev/gemini-api/docs/models (input / output token limits)
    ModelInfo("gemini-3.1-pro-preview", "Gemini 3.1 Pro Preview", _M, 65_536),
    ModelInfo("gemini-3-pro-preview", "Gemini 3 Pro Preview", _M, 65_536),
    ModelInfo("gemini-3-flash-preview", "Gemini 3 Flash Preview", _M, 65_536),
    ModelInfo("gemini-2.5-pro", "Gemini 2.5 Pro", _M, 65_536),
    ModelInfo("gemini-2.5-flash", "Gemini 2.5 Flash", _M, 65_536),
    ModelInfo("gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite", _M, 65_536),
    ModelInfo("gemini-2.0-flash", "Gemini 2.0 Flash", _M, 8_192),
)


class GeminiProvider(HttpProvider):
    """Gemini API (Google AI Studio keys). ``settings.api_key`` goes in ``x-goog-api-key``."""

    protocol: ClassVar[str] = "gemini"
    DEFAULT_MODELS: ClassVar[tuple[ModelInfo, ...]] = _DEFAULT_MODELS

    def build_call(self, request: ChatRequest) -> HttpCall:
        """``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the body of
        :func:`~apps.engine.providers.gemini.request.build_body`."""
        model = quote(request.model.removeprefix("models/"), safe="-._~")
        url = f"{self.api_root}/models/{model}:streamGenerateContent?alt=sse"
        return HttpCall(url=url, headers=self._headers(accept="text/event-stream"),
                        body=build_body(request))

    def new_translator(self) -> GeminiTranslator:
        """A fresh stream translator for one response."""
        return GeminiTranslator()

    async def fetch_models(self) -> list[ModelInfo]:
        """``GET {base}/v1beta/models``, following ``nextPageToken``; only models that can
        ``generateContent`` (https://ai.google.dev/api/models#method:-models.list)."""
        models: list[ModelInfo] = []
        token: str | None = None
        for _ in range(MAX_MODEL_PAGES):
            query = {"pageSize": 1000, **({"pageToken": token} if token else {})}
            page = await self.get_json(f"{self.api_root}/models?{urlencode(query)}",
                                       self._headers(accept="application/json"))
            models.extend(_model_info(m) for m in page.get("models") or () if _generates(m))
            token = page.get("nextPageToken") or None
            if token is None:
                break
        return models

    @property
    def api_root(self) -> str:
        """``{base_url}/v1beta``, whatever version suffix the configured base URL carried."""
        base = (self.settings.base_url or DEFAULT_BASE_URL).rstrip("/")
        for suffix in ("/v1beta", "/v1"):
            base = base.removesuffix(suffix)
        return f"{base}/{API_VERSION}"

    def _headers(self, *, accept: str) -> dict[str, str]:
        headers = {"accept": accept, **dict(self.settings.headers)}
        if self.settings.api_key:
            headers["x-goog-api-key"] = self.settings.api_key
        return headers


def _generates(model: Any) -> bool:
    methods = model.get("supportedGenerationMethods") if isinstance(model, dict) else None
    return isinstance(model, dict) and (methods is None or "generateContent" in methods)


def _model_info(model: dict[str, Any]) -> ModelInfo:
    return ModelInfo(
        id=str(model["name"]).removeprefix("models/"),
        display_name=model.get("displayName"),
        context_window=model.get("inputTokenLimit"),
        max_output_tokens=model.get("outputTokenLimit"),
    )
